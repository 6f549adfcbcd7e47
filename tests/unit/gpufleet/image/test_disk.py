import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import ImageError
from gpufleet.image import disk


def test_a_missing_root_directory_is_named(tmp_path):
    with pytest.raises(ImageError, match="root directory .* does not exist"):
        disk.assemble_disk(str(tmp_path / "nope"), str(tmp_path / "disk.raw"), 128)


def test_a_disk_too_small_for_esp_seed_and_root_is_refused_before_any_file_is_written(tmp_path):
    with pytest.raises(ImageError, match="no room for the root"):
        disk.assemble_disk(str(tmp_path), str(tmp_path / "disk.raw"), 70)
    assert not (tmp_path / "disk.raw").exists() and not (tmp_path / "disk.raw.part").exists()


def test_missing_host_tools_are_named_with_their_packages():
    with pytest.raises(ImageError, match="needs sgdisk, mcopy.*apt install gdisk e2fsprogs dosfstools mtools"):
        disk.check_host(which=lambda tool: None if tool in ("sgdisk", "mcopy") else "/usr/bin/" + tool)
