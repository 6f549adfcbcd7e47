import gzip
import hashlib
import os

import pytest

from gpufleet.deploy.errors import DeployError
from gpufleet.deploy.write import HEADER, write_image
from tests.unit.gpufleet.deploy.disk_factory import gpt_image

OLD = b"old image "  # what the disk held before: a bootable older image


def _disk(tmp_path, size=8 << 20):
    path = tmp_path / "disk"
    path.write_bytes((OLD * (size // len(OLD) + 1))[:size])
    return str(path)


def _blocks(data, size=1 << 20):
    return [data[i:i + size] for i in range(0, len(data), size)]


def _sha(data):
    return hashlib.sha256(data).hexdigest()


def _read(path):
    with open(path, "rb") as handle:
        return handle.read()


@pytest.mark.parametrize("compressed", [False, True])
def test_writes_the_image_and_reports_both_digests(tmp_path, compressed):
    image = gpt_image()
    data = gzip.compress(image, mtime=0) if compressed else image
    disk = _disk(tmp_path)
    seen = []
    result = write_image(_blocks(data), disk, len(data), _sha(data), compressed=compressed,
                         progress=lambda done, total: seen.append((done, total)))
    written = _read(disk)
    assert written[:len(image)] == image
    assert result["image_bytes"] == len(image)
    assert result["sha256"] == _sha(data) and result["downloaded_bytes"] == len(data)
    assert seen[-1] == (len(data), len(data))
    # the old backup GPT area at the disk's end was wiped: no stale table for firmware to find
    assert written[-HEADER:] == b"\0" * HEADER


def _assert_unbootable(disk):
    data = _read(disk)
    assert data[:HEADER] == b"\0" * HEADER, "a failed write must leave no partition table"
    assert data[-HEADER:] == b"\0" * HEADER


def test_an_altered_artifact_is_written_nowhere_bootable(tmp_path):
    image = gpt_image()
    disk = _disk(tmp_path)
    altered = image[:-1] + b"x"
    with pytest.raises(DeployError, match="artifact was altered") as err:
        write_image(_blocks(altered), disk, len(image), _sha(image))
    assert err.value.step == "verify"
    _assert_unbootable(disk)


def test_a_truncated_download_is_refused_and_leaves_the_disk_unbootable(tmp_path):
    image = gpt_image()
    disk = _disk(tmp_path)
    with pytest.raises(DeployError, match="truncated download"):
        write_image(_blocks(image[:len(image) // 2]), disk, len(image), _sha(image))
    _assert_unbootable(disk)


def test_a_truncated_gzip_stream_is_refused(tmp_path):
    data = gzip.compress(gpt_image(), mtime=0)
    cut = data[:len(data) - 20]
    with pytest.raises(DeployError, match="gzip stream ended early|truncated"):
        write_image(_blocks(cut), _disk(tmp_path), len(cut), _sha(cut), compressed=True)


def test_more_bytes_than_the_manifest_names_stop_the_download(tmp_path):
    image = gpt_image()
    disk = _disk(tmp_path)
    with pytest.raises(DeployError, match="more than the"):
        write_image(_blocks(image + b"extra"), disk, len(image), _sha(image))
    _assert_unbootable(disk)


def test_a_disk_smaller_than_the_image_is_refused(tmp_path):
    image = gpt_image(size=8 << 20)
    disk = _disk(tmp_path, size=4 << 20)
    with pytest.raises(DeployError, match="larger than"):
        write_image(_blocks(image), disk, len(image), _sha(image))
    assert _read(disk)[:HEADER] == b"\0" * HEADER


def test_power_lost_mid_write_leaves_no_table_and_a_rerun_converges(tmp_path):
    image = gpt_image()
    disk = _disk(tmp_path)

    def cut_after_two_blocks():
        for index, block in enumerate(_blocks(image)):
            if index == 2:
                raise DeployError("download", "connection reset (power lost)")
            yield block

    with pytest.raises(DeployError, match="power lost"):
        write_image(cut_after_two_blocks(), disk, len(image), _sha(image))
    _assert_unbootable(disk)
    write_image(_blocks(image), disk, len(image), _sha(image))
    assert _read(disk)[:len(image)] == image


def test_a_disk_that_returns_other_bytes_fails_the_read_back(tmp_path, monkeypatch):
    image = gpt_image()
    disk = _disk(tmp_path)
    import gpufleet.deploy.write as write_mod
    real_pread = write_mod.os.pread

    def rotten(fd, length, offset):
        data = real_pread(fd, length, offset)
        return data if offset < HEADER or not data else b"\xff" + data[1:]

    monkeypatch.setattr(write_mod.os, "pread", rotten)
    with pytest.raises(DeployError, match="read back .* differ"):
        write_image(_blocks(image), disk, len(image), _sha(image))
    monkeypatch.undo()
    _assert_unbootable(disk)


def test_a_missing_disk_names_the_hints(tmp_path):
    with pytest.raises(DeployError, match="root-device hints"):
        write_image([], str(tmp_path / "nope"), 1, "0" * 64)


def test_a_highly_compressed_image_is_written_in_bounded_pieces(tmp_path, monkeypatch):
    # 64 MiB of zeros gzip to about 64 KiB: one download block must not become one 64 MiB buffer
    import gpufleet.deploy.write as write_mod
    image = gpt_image(size=64 << 20, fill=b"")
    data = gzip.compress(image, mtime=0)
    assert len(data) < (1 << 20)
    sizes = []
    real_pwrite = write_mod.os.pwrite

    def recording(fd, chunk, offset):
        sizes.append(len(chunk))
        return real_pwrite(fd, chunk, offset)

    monkeypatch.setattr(write_mod.os, "pwrite", recording)
    disk = _disk(tmp_path, size=80 << 20)
    write_image([data], disk, len(data), _sha(data), compressed=True)
    assert max(sizes) <= write_mod.CHUNK
    assert _read(disk)[:len(image)] == image


def _with_empty_middle(size=8 << 20):
    """A GPT image whose MiBs 3-5 are all zeros, as a whole-disk image's free space is."""
    image = bytearray(gpt_image(size=size))
    image[3 << 20:6 << 20] = bytes(3 << 20)
    return bytes(image)


def test_zero_blocks_become_one_zeroed_run_and_old_data_there_is_gone(tmp_path):
    image = _with_empty_middle()
    disk = _disk(tmp_path, size=12 << 20)
    result = write_image(_blocks(image, size=700 << 10), disk, len(image), _sha(image))
    assert _read(disk)[:len(image)] == image  # the old image's bytes in the empty MiBs are zeros now
    assert result["zeroed_bytes"] == 3 << 20


def _as_block_device(monkeypatch, ioctl):
    import stat as stat_mod

    import gpufleet.deploy.write as write_mod
    real_fstat = write_mod.os.fstat

    class _Stat:
        def __init__(self, fd):
            self.st_mode = stat_mod.S_IFBLK | (real_fstat(fd).st_mode & 0o777)

    monkeypatch.setattr(write_mod.os, "fstat", _Stat)
    monkeypatch.setattr(write_mod.fcntl, "ioctl", ioctl)
    return write_mod


def test_on_a_block_device_zero_runs_go_to_the_devices_zeroing_command_not_as_data(tmp_path, monkeypatch):
    import struct as struct_mod
    image = _with_empty_middle()
    disk = _disk(tmp_path, size=12 << 20)
    calls, writes = [], []
    real_pwrite = os.pwrite

    def zeroout(fd, request, arg):
        offset, length = struct_mod.unpack("QQ", arg)
        calls.append((request, offset, length))
        real_pwrite(fd, bytes(length), offset)  # what the device does
        return 0

    write_mod = _as_block_device(monkeypatch, zeroout)

    def recording(fd, data, offset):
        writes.append((offset, len(data)))
        return real_pwrite(fd, data, offset)

    monkeypatch.setattr(write_mod.os, "pwrite", recording)
    write_image(_blocks(image), disk, len(image), _sha(image))
    monkeypatch.undo()
    assert calls == [(0x127F, 3 << 20, 3 << 20)]
    # no image write touched the zeroed run (only the device's own zeroing did)
    assert writes and not [w for w in writes if w[0] < 6 << 20 and w[0] + w[1] > 3 << 20]
    assert _read(disk)[:len(image)] == image


def test_a_disk_that_ignores_its_zeroing_command_fails_the_check_and_stays_unbootable(tmp_path, monkeypatch):
    image = _with_empty_middle()
    disk = _disk(tmp_path, size=12 << 20)
    _as_block_device(monkeypatch, lambda fd, request, arg: 0)  # says done, leaves the old bytes
    with pytest.raises(DeployError, match="zeroing command") as err:
        write_image(_blocks(image), disk, len(image), _sha(image))
    monkeypatch.undo()
    assert err.value.step == "verify"
    _assert_unbootable(disk)


def _zeroing_raises(monkeypatch, code, text):
    import errno

    def ioctl(fd, request, arg):
        raise OSError(getattr(errno, code), text)

    _as_block_device(monkeypatch, ioctl)


def test_a_disk_without_the_zeroing_command_gets_written_zeros(tmp_path, monkeypatch):
    image, disk = _with_empty_middle(), _disk(tmp_path, size=12 << 20)
    _zeroing_raises(monkeypatch, "EOPNOTSUPP", "Operation not supported")
    result = write_image(_blocks(image), disk, len(image), _sha(image))
    monkeypatch.undo()
    assert result["zeroed_bytes"] == 3 << 20
    assert _read(disk)[:len(image)] == image


def test_a_zeroing_error_the_disk_reports_fails_the_write(tmp_path, monkeypatch):
    image, disk = _with_empty_middle(), _disk(tmp_path, size=12 << 20)
    _zeroing_raises(monkeypatch, "EIO", "Input/output error")
    with pytest.raises(DeployError, match="zeroing .* failed .*Input/output error"):
        write_image(_blocks(image), disk, len(image), _sha(image))
    monkeypatch.undo()
    _assert_unbootable(disk)
