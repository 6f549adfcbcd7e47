"""Stream a whole-disk image onto a disk so that a half-written disk never boots.

The order is the safety argument:

1. The disk is made unbootable first: its first and last MiB (protective MBR, primary and backup
   GPT) are zeroed and flushed. A power cut from here on leaves a disk no firmware boots, so the
   machine falls back to the installer on the next try instead of a torn image.
2. The image streams in while its bytes are hashed; the image's first MiB (its partition table)
   is held back in memory, everything after it is written in place, one aligned MiB at a time.
   A MiB that is all zeros (a whole-disk image's free space: about 45% of the lab machine's) is
   not written as data: runs of them are zeroed with the device's own command (BLKZEROOUT, which
   NVMe and SCSI disks carry out without the bytes crossing the bus, and which the kernel
   guarantees reads back as zeros), or with written zeros where the target cannot.
3. The stream must match the signed manifest (size and sha256, checked by the caller's digest),
   or the disk stays unbootable and the install fails.
4. The written bytes are flushed, dropped from the page cache and read back; their digest must
   equal the digest of what was written. Zeroed runs are spot-read (their first and last 4 KiB)
   instead of read whole, so a disk that ignored the zeroing command fails here too.
5. Only then is the held-back first MiB written, flushed and read back. The disk is now bootable.

A re-run after any failure starts again at step 1 and converges. Ironic's IPA streams the same
way (``image_download`` + ``write_image``) but writes the partition table first; holding it back
is what makes "a half-written disk is never reported as imaged" true even across a power cut.
"""
import errno
import fcntl
import hashlib
import os
import stat
import struct
import time
import zlib

from gpufleet.deploy.errors import DeployError

__all__ = ["HEADER", "CHUNK", "write_image", "target_size"]

HEADER = 1 << 20  # the protective MBR and primary GPT live in the first 34 sectors; a MiB covers 4Kn disks
CHUNK = 4 << 20
BLOCK = HEADER  # the unit a zero run is made of: aligned, so a zeroed range never splits a block
_STEP = "write"
_BLKZEROOUT = 0x127F  # _IO(0x12, 127) in linux/fs.h: zero a byte range of a block device
_SPOT = 4096
_ZEROS = bytes(BLOCK)


def target_size(fd):
    """Size in bytes of a block device or a regular file (the lab's disk files) open at ``fd``."""
    return os.lseek(fd, 0, os.SEEK_END)


def _zero(fd, offset, length):
    end = offset + length
    while offset < end:  # CHUNK at a time: a zero run can be most of a disk
        step = min(CHUNK, end - offset)
        os.pwrite(fd, b"\0" * step, offset)
        offset += step


def _zero_run(fd, offset, length, device):
    """Make ``length`` bytes at ``offset`` zeros; ``device``: the target is a block device."""
    if device:
        try:
            fcntl.ioctl(fd, _BLKZEROOUT, struct.pack("QQ", offset, length))
            return
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOTTY):
                raise DeployError(_STEP, "zeroing %d bytes at %d failed (%s); fix: check the disk "
                                  "(dmesg) and re-run" % (length, offset, exc.strerror))
    _zero(fd, offset, length)  # a regular file (the lab's disk files) or a disk without the command


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


def _spot_check_zeros(fd, start, length, disk_path):
    for offset in (start, start + length - _SPOT):
        if os.pread(fd, _SPOT, offset).strip(b"\0"):
            raise DeployError("verify", "%s holds data at byte %d, which was zeroed; fix: the disk "
                              "ignores its zeroing command or is failing, replace it" % (disk_path, offset))


class _Placer:
    """Places the decoded image on the disk in aligned blocks: data written, zero blocks batched
    into runs, the header held back. Remembers the extents so the read-back can follow them."""

    def __init__(self, fd, disk_path, disk_size):
        self.fd, self.disk_path, self.disk_size = fd, disk_path, disk_size
        self.device = stat.S_ISBLK(os.fstat(fd).st_mode)
        self.header = bytearray()
        self.pending = bytearray()  # the start of a block not yet whole
        self.placed = 0        # bytes of decoded image on the disk or held as the header
        # The data runs after the header, in order, as written: the read-back must match. (No
        # digest of the whole decoded image: it checks nothing the manifest's digest of the
        # download does not, and hashing every zero costs minutes on a slow installer CPU.)
        self.data_written = hashlib.sha256()
        self.data = []         # [offset, length] of the data runs after the header, in order
        self.zeros = []        # [offset, length] of the zeroed runs
        self.zero_run = None   # the zero run being gathered, [offset, length]

    def feed(self, data):
        if self.placed + len(self.pending) + len(data) > self.disk_size:
            raise DeployError(_STEP, "the image is larger than %s (%d bytes); fix: pick a larger "
                              "disk with the root-device hints" % (self.disk_path, self.disk_size))
        if self.pending:  # complete the block a previous piece began
            need = BLOCK - len(self.pending)
            self.pending.extend(data[:need])
            data = data[need:]
            if len(self.pending) < BLOCK:
                return
            self._place(self.pending)
            self.pending = bytearray()
        whole = len(data) - len(data) % BLOCK
        if whole:
            self._place(data if whole == len(data) else data[:whole])
        self.pending.extend(data[whole:])

    def finish(self):
        if self.pending:
            self._place(self.pending)  # the image's last, partial block: always data
            self.pending = bytearray()
        self._flush_zeros()

    def _place(self, data):
        for start in range(0, len(data), BLOCK):
            block = data[start:start + BLOCK]  # a copy, but bytes == bytes is one memcmp
            at = self.placed
            self.placed += len(block)
            if at < HEADER:
                self.header.extend(block)
            elif block == _ZEROS:
                if self.zero_run is None:
                    self.zero_run = [at, 0]
                self.zero_run[1] += BLOCK
            else:
                self._flush_zeros()
                os.pwrite(self.fd, block, at)
                self.data_written.update(block)
                if self.data and self.data[-1][0] + self.data[-1][1] == at:
                    self.data[-1][1] += len(block)
                else:
                    self.data.append([at, len(block)])

    def _flush_zeros(self):
        if self.zero_run is not None:
            _zero_run(self.fd, self.zero_run[0], self.zero_run[1], self.device)
            self.zeros.append(self.zero_run)
            self.zero_run = None


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
    decoder = _Decoder(compressed)
    placer = _Placer(fd, disk_path, disk_size)
    count = 0
    for block in blocks:
        count += len(block)
        if count > expected_size:
            raise DeployError("download", "received more than the %d bytes the signed manifest "
                              "names; fix: the server is serving another artifact" % expected_size)
        received.update(block)
        for piece in decoder.feed(block):
            placer.feed(piece)
        progress(count, expected_size)
    placer.feed(decoder.finish())
    placer.finish()
    if count != expected_size:
        raise DeployError("download", "received %d of the %d bytes the signed manifest names "
                          "(truncated download); the disk is left unbootable; fix: re-run"
                          % (count, expected_size))
    if received.hexdigest() != expected_sha256:
        raise DeployError("verify", "the downloaded image's sha256 is %s, the signed manifest says "
                          "%s: the artifact was altered; the disk is left unbootable"
                          % (received.hexdigest(), expected_sha256))
    header, offset = bytes(placer.header), placer.placed
    if offset < HEADER:
        raise DeployError(_STEP, "the image is only %d bytes, smaller than its partition table "
                          "area; fix: rebuild the whole-disk image" % offset)
    # Step 4: what the disk holds after the header must be what was written.
    os.fsync(fd)
    _drop_cache(fd)
    readback = hashlib.sha256()
    for at, length in placer.data:
        _read_back(fd, at, at + length, readback)
    if readback.hexdigest() != placer.data_written.hexdigest():
        raise DeployError("verify", "the bytes read back from %s differ from the bytes written; "
                          "fix: the disk is failing, replace it" % disk_path)
    for at, length in placer.zeros:
        _spot_check_zeros(fd, at, length, disk_path)
    # Step 5: the partition table last.
    os.pwrite(fd, header, 0)
    os.fsync(fd)
    _drop_cache(fd)
    if os.pread(fd, HEADER, 0) != header:
        raise DeployError("verify", "the partition table read back from %s differs from the one "
                          "written; fix: the disk is failing, replace it" % disk_path)
    return {"disk": disk_path, "disk_bytes": disk_size, "image_bytes": offset,
            "zeroed_bytes": sum(length for _, length in placer.zeros), "downloaded_bytes": count,
            "sha256": received.hexdigest(), "seconds": round(clock() - started, 3)}
