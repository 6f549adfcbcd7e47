import io
import tarfile

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import artifact
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import ManifestError

EPOCH = 1700000000


def export_tar(path, mtime, order):
    """A tar shaped like `docker export`: no ./ prefix, docker runtime files, a hard link."""
    files = {"etc/gpufleet/image-release": b'VERSION="lab"\n', ".dockerenv": b"", "etc/hosts": b"127.0.0.1 x\n",
             "usr/bin/fio": b"\x7fELF fio"}
    with tarfile.open(path, "w") as tar:
        for name in order:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.uname = len(files[name]), mtime, "root"
            tar.addfile(info, io.BytesIO(files[name]))
        link = tarfile.TarInfo("usr/bin/fio-link")
        link.type, link.linkname, link.mtime = tarfile.LNKTYPE, "usr/bin/fio", mtime
        tar.addfile(link)


def test_normalized_rootfs_is_byte_identical_whatever_the_order_and_build_time(tmp_path):
    names = ["usr/bin/fio", ".dockerenv", "etc/hosts", "etc/gpufleet/image-release"]
    export_tar(str(tmp_path / "a.tar"), EPOCH + 500, names)
    export_tar(str(tmp_path / "b.tar"), EPOCH + 9000, list(reversed(names)))
    artifact.normalize_rootfs(str(tmp_path / "a.tar"), str(tmp_path / "a.tgz"), EPOCH)
    count = artifact.normalize_rootfs(str(tmp_path / "b.tar"), str(tmp_path / "b.tgz"), EPOCH)
    assert count == 3
    assert artifact.sha256_file(str(tmp_path / "a.tgz")) == artifact.sha256_file(str(tmp_path / "b.tgz"))
    index = artifact.tar_index(str(tmp_path / "a.tgz"))
    assert sorted(index) == ["etc/gpufleet/image-release", "usr/bin/fio", "usr/bin/fio-link"]
    assert index["usr/bin/fio"][4] == EPOCH and index["usr/bin/fio-link"][5] == "usr/bin/fio"
    assert artifact.read_member(str(tmp_path / "a.tgz"), "/etc/gpufleet/image-release") == b'VERSION="lab"\n'


def test_old_mtimes_are_kept_and_diff_names_what_differs(tmp_path):
    export_tar(str(tmp_path / "a.tar"), EPOCH - 100, ["usr/bin/fio"])
    export_tar(str(tmp_path / "b.tar"), EPOCH - 50, ["usr/bin/fio"])
    artifact.normalize_rootfs(str(tmp_path / "a.tar"), str(tmp_path / "a.tgz"), EPOCH)
    artifact.normalize_rootfs(str(tmp_path / "b.tar"), str(tmp_path / "b.tgz"), EPOCH)
    report = artifact.diff_tar_indexes(artifact.tar_index(str(tmp_path / "a.tgz")),
                                       artifact.tar_index(str(tmp_path / "b.tgz")))
    assert report["count"] == 2
    assert report["paths"][0] == {"path": "usr/bin/fio", "differs": ["mtime"]}
    only = artifact.diff_tar_indexes({"x": (1,)}, {})
    assert only["paths"] == [{"path": "x", "differs": ["only in first"]}]


def test_unreadable_export_and_missing_member_fail(tmp_path):
    (tmp_path / "bad.tar").write_bytes(b"nope")
    with pytest.raises(ManifestError, match="Cannot read the exported root filesystem"):
        artifact.normalize_rootfs(str(tmp_path / "bad.tar"), str(tmp_path / "o.tgz"), EPOCH)
    export_tar(str(tmp_path / "a.tar"), EPOCH, ["usr/bin/fio"])
    with pytest.raises(ManifestError, match="has no file etc/gpufleet/image-release"):
        artifact.read_member(str(tmp_path / "a.tar"), "etc/gpufleet/image-release")
