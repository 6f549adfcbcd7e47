"""Stream a whole-disk image onto a disk so that a half-written disk never boots.

The order is the safety argument:

1. The disk is made unbootable first: its first and last MiB (protective MBR, primary and backup
   GPT) are zeroed and flushed. A power cut from here on leaves a disk no firmware boots, so the
   machine falls back to the installer on the next try instead of a torn image.
2. The image streams in while its bytes are hashed; the image's first MiB (its partition table)
   is held back in memory, everything after it is written in place.
3. The stream must match the signed manifest (size and sha256, checked by the caller's digest),
   or the disk stays unbootable and the install fails.
4. The written bytes are flushed, dropped from the page cache and read back; their digest must
   equal the digest of what was written.
5. Only then is the held-back first MiB written, flushed and read back. The disk is now bootable.

A re-run after any failure starts again at step 1 and converges. Ironic's IPA streams the same
way (``image_download`` + ``write_image``) but writes the partition table first; holding it back
is what makes "a half-written disk is never reported as imaged" true even across a power cut.
"""
import hashlib
import os
import time
import zlib

from gpufleet.deploy.errors import DeployError

__all__ = ["HEADER", "CHUNK", "write_image", "target_size"]

HEADER = 1 << 20  # the protective MBR and primary GPT live in the first 34 sectors; a MiB covers 4Kn disks
CHUNK = 4 << 20
_STEP = "write"


def target_size(fd):
    """Size in bytes of a block device or a regular file (the lab's disk files) open at ``fd``."""
    return os.lseek(fd, 0, os.SEEK_END)


def _zero(fd, offset, length):
    os.pwrite(fd, b"\0" * length, offset)


def _drop_cache(fd):
    # After fsync the pages are clean; dropping them makes the read-back come from the device.
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except (AttributeError, OSError):
        pass


def _read_back(fd, start, end, digest):
    offset = start
    while offset < end:
        block = os.pread(fd, min(CHUNK, end - offset), offset)
        if not block:
            raise DeployError("verify", "the disk ended at byte %d while reading back %d bytes; "
                              "fix: check the disk (dmesg) and re-run" % (offset, end))
        digest.update(block)
        offset += len(block)


class _Decoder:
    """Pass-through for raw images, streaming gunzip for ``.gz`` ones, in bounded pieces.

    A MiB of gzip can expand to a GiB of zeros (a whole-disk image is mostly empty): output is
    taken CHUNK bytes at a time, so the agent's memory stays bounded whatever the ratio.
    """

    def __init__(self, compressed):
        self._z = zlib.decompressobj(16 + zlib.MAX_WBITS) if compressed else None

    def feed(self, block):
        if self._z is None:
            yield block
            return
        data = block
        while data:
            try:
                out = self._z.decompress(data, CHUNK)
            except zlib.error as exc:
                raise DeployError(_STEP, "the image is not valid gzip (%s); fix: rebuild the image" % exc)
            if out:
                yield out
            data = self._z.unconsumed_tail

    def finish(self):
        if self._z is None:
            return b""
        tail = self._z.flush()
        if not self._z.eof:
            raise DeployError(_STEP, "the gzip stream ended early (truncated download); fix: re-run")
        return tail


def write_image(blocks, disk_path, expected_size, expected_sha256, compressed=False, progress=None,
                clock=time.monotonic):
    """Write the image given as an iterable of byte blocks to ``disk_path``.

    ``expected_size`` and ``expected_sha256`` describe the downloaded bytes (the artifact the
    signed manifest names). Returns a summary; raises DeployError with the disk left unbootable.
    """
    progress = progress or (lambda done, total: None)
    started = clock()
    try:
        fd = os.open(disk_path, os.O_RDWR)
    except OSError as exc:
        raise DeployError(_STEP, "cannot open %s (%s); fix: check the root-device hints"
                          % (disk_path, exc.strerror))
    try:
        return _write(fd, blocks, disk_path, expected_size, expected_sha256, compressed, progress,
                      started, clock)
    finally:
        os.close(fd)


def _write(fd, blocks, disk_path, expected_size, expected_sha256, compressed, progress, started, clock):
    disk_size = target_size(fd)
    if disk_size < 2 * HEADER:
        raise DeployError(_STEP, "%s holds %d bytes, too small for any image" % (disk_path, disk_size))
    # Step 1: unbootable before the first image byte lands.
    _zero(fd, 0, HEADER)
    _zero(fd, disk_size - HEADER, HEADER)
    os.fsync(fd)

    received = hashlib.sha256()
    written = hashlib.sha256()
    decoder = _Decoder(compressed)
    header = bytearray()
    count = 0
    offset = 0  # bytes of decoded image placed so far (header included)

    def place(data):
        nonlocal offset
        if offset + len(data) > disk_size:
            raise DeployError(_STEP, "the image is larger than %s (%d bytes); fix: pick a larger "
                              "disk with the root-device hints" % (disk_path, disk_size))
        written.update(data)
        keep = max(0, min(len(data), HEADER - offset))
        header.extend(data[:keep])
        if keep < len(data):
            os.pwrite(fd, data[keep:], offset + keep)
        offset += len(data)

    for block in blocks:
        count += len(block)
        if count > expected_size:
            raise DeployError("download", "received more than the %d bytes the signed manifest "
                              "names; fix: the server is serving another artifact" % expected_size)
        received.update(block)
        for piece in decoder.feed(block):
            place(piece)
        progress(count, expected_size)
    place(decoder.finish())
    if count != expected_size:
        raise DeployError("download", "received %d of the %d bytes the signed manifest names "
                          "(truncated download); the disk is left unbootable; fix: re-run"
                          % (count, expected_size))
    if received.hexdigest() != expected_sha256:
        raise DeployError("verify", "the downloaded image's sha256 is %s, the signed manifest says "
                          "%s: the artifact was altered; the disk is left unbootable"
                          % (received.hexdigest(), expected_sha256))
    if offset < HEADER:
        raise DeployError(_STEP, "the image is only %d bytes, smaller than its partition table "
                          "area; fix: rebuild the whole-disk image" % offset)
    # Step 4: what the disk holds after the header must be what was written.
    os.fsync(fd)
    _drop_cache(fd)
    readback = hashlib.sha256(bytes(header))
    _read_back(fd, HEADER, offset, readback)
    if readback.hexdigest() != written.hexdigest():
        raise DeployError("verify", "the bytes read back from %s differ from the bytes written; "
                          "fix: the disk is failing, replace it" % disk_path)
    # Step 5: the partition table last.
    os.pwrite(fd, bytes(header), 0)
    os.fsync(fd)
    _drop_cache(fd)
    if os.pread(fd, HEADER, 0) != bytes(header):
        raise DeployError("verify", "the partition table read back from %s differs from the one "
                          "written; fix: the disk is failing, replace it" % disk_path)
    return {"disk": disk_path, "disk_bytes": disk_size, "image_bytes": offset,
            "downloaded_bytes": count, "sha256": received.hexdigest(),
            "written_sha256": written.hexdigest(), "seconds": round(clock() - started, 3)}
