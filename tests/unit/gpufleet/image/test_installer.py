import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import ImageError
from gpufleet.image import installer
from tests.helpers import ROOT


def test_the_boot_menu_boots_the_ramdisk_with_serial_console_and_the_given_arguments():
    cfg = installer.grub_cfg(["gpufleet.config_base=https://ctl.example/deploy/"])
    assert "linux /boot/vmlinuz console=tty0 console=ttyS0,115200 panic=30 " \
           "gpufleet.config_base=https://ctl.example/deploy/\n" in cfg
    assert "initrd /boot/initrd.img" in cfg and "set timeout=0" in cfg


def test_the_root_cache_key_follows_the_package_list_not_its_order():
    assert installer.rootfs_key(("a", "b")) == installer.rootfs_key(("b", "a"))
    assert installer.rootfs_key(("a", "b")) != installer.rootfs_key(("a", "b", "c"))


def test_missing_host_tools_are_named_with_their_packages():
    with pytest.raises(ImageError) as err:
        installer.check_host(which=lambda tool: None if tool in ("grub-mkrescue", "mformat") else "/usr/bin/" + tool)
    assert "grub-mkrescue, mformat" in err.value.msg
    assert "apt install grub-common grub-efi-amd64-bin grub-pc-bin mtools" in err.value.msg


def test_the_ramdisk_gets_the_agent_and_the_collections_verification_code(tmp_path):
    agent = installer._copy_tree_files(installer.AGENT_FILES, installer._PACKAGE_ROOT, str(tmp_path))
    collection = installer._copy_tree_files(installer.COLLECTION_FILES, ROOT, str(tmp_path / "c"))
    assert "gpufleet/deploy/agent.py" in agent and "gpufleet/deploy/write.py" in agent
    assert "plugins/module_utils/image/verify.py" in collection
    # nothing of the controller beyond the agent: the ramdisk needs no ansible, pydantic or requests
    assert all(path.startswith("gpufleet/deploy/") for path in agent)
    assert os.path.isfile(tmp_path / "gpufleet" / "deploy" / "hints.py")


def test_a_missing_agent_file_is_an_error_not_a_smaller_ramdisk(tmp_path):
    with pytest.raises(ImageError, match="missing"):
        installer._copy_tree_files(("gpufleet/deploy/nope.py",), installer._PACKAGE_ROOT, str(tmp_path))
