import os
import shutil
import subprocess

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
        installer.check_host(which=lambda tool: None if tool in ("grub-mkimage", "mcopy") else "/usr/bin/" + tool)
    assert "grub-mkimage, mcopy" in err.value.msg
    assert "apt install grub-common grub-pc-bin mtools" in err.value.msg


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


def _fake_signed_root(root, skip=()):
    for name, (rel, _) in installer.SIGNED.items():
        if name not in skip:
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "wb") as handle:
                handle.write(b"MZ signed " + name.encode())


def test_the_signed_boot_files_come_from_debians_packages(tmp_path):
    _fake_signed_root(str(tmp_path / "root"))
    got = installer.signed_files(str(tmp_path / "root"), str(tmp_path / "efi"))
    assert sorted(got) == ["gcdx64.efi", "grubx64.efi", "shimx64.efi"]
    assert open(got["shimx64.efi"], "rb").read() == b"MZ signed shimx64.efi"
    assert installer.SIGNED["shimx64.efi"] == ("usr/lib/shim/shimx64.efi.signed", "shim-signed")
    assert installer.SIGNED["gcdx64.efi"] == ("usr/lib/grub/x86_64-efi-signed/gcdx64.efi.signed",
                                              "grub-efi-amd64-signed")
    assert {"shim-signed", "grub-efi-amd64-signed", "linux-image-cloud-amd64"} <= set(installer.PACKAGES)


def test_a_missing_signed_file_is_an_error_naming_its_package(tmp_path):
    _fake_signed_root(str(tmp_path / "root"), skip=("gcdx64.efi",))
    with pytest.raises(ImageError) as err:
        installer.signed_files(str(tmp_path / "root"), str(tmp_path / "efi"))
    assert "gcdx64.efi.signed (package grub-efi-amd64-signed)" in err.value.msg
    assert "Secure Boot" in err.value.msg


def test_the_efi_boot_image_is_shim_as_bootx64_with_the_cd_grub_beside_it():
    assert installer.EFI_IMAGE_FILES == {"EFI/BOOT/BOOTX64.EFI": "shimx64.efi", "EFI/BOOT/grubx64.efi": "gcdx64.efi"}
    argv = installer.xorriso_argv("/o.iso", "/tree", "efi.img", "boot/grub/i386-pc/eltorito.img")
    assert argv[argv.index("--efi-boot") + 1] == "efi.img" and "-efi-boot-part" in argv
    assert argv[argv.index("-b") + 1] == "boot/grub/i386-pc/eltorito.img"
    assert argv[-3:] == ["-o", "/o.iso", "/tree"]


def _tools(*names):
    missing = [n for n in names if not shutil.which(n)]
    if missing:
        pytest.skip("needs %s" % ", ".join(missing))


def test_a_built_iso_carries_shim_and_the_signed_grub_in_its_efi_image(tmp_path):
    """The layout code for real (mkfs.vfat, mtools, grub-mkimage, xorriso) on stand-in files."""
    _tools("mkfs.vfat", "mcopy", "mdir", "grub-mkimage", "xorriso")
    if not os.path.isdir(installer.BIOS_GRUB):
        pytest.skip("grub-pc-bin is not installed")
    _fake_signed_root(str(tmp_path / "root"))
    efi = installer.signed_files(str(tmp_path / "root"), str(tmp_path / "efi"))
    tree = tmp_path / "iso"
    (tree / "boot" / "grub").mkdir(parents=True)
    (tree / "boot" / "grub" / "grub.cfg").write_text(installer.grub_cfg([]))
    efi_rel, bios_rel = installer._boot_images(str(tree), efi, subprocess.run)
    iso = str(tmp_path / "out.iso")
    subprocess.run(installer.xorriso_argv(iso, str(tree), efi_rel, bios_rel), check=True, capture_output=True)
    listing = subprocess.run(["mdir", "-i", str(tree / efi_rel), "-b", "-/", "::"], capture_output=True,
                             text=True, check=True).stdout.split()
    assert sorted(listing) == ["::/EFI/", "::/EFI/BOOT/", "::/EFI/BOOT/BOOTX64.EFI", "::/EFI/BOOT/grubx64.efi"]
    shim = subprocess.run(["mtype", "-i", str(tree / efi_rel), "::/EFI/BOOT/BOOTX64.EFI"], capture_output=True,
                          check=True).stdout
    assert shim == b"MZ signed shimx64.efi"
    report = subprocess.run(["xorriso", "-indev", iso, "-report_el_torito", "plain"], capture_output=True,
                            text=True, check=True).stdout
    assert "/efi.img" in report and "/boot/grub/i386-pc/eltorito.img" in report
    assert (tree / ".disk" / "info").is_file()   # how Debian's CD GRUB finds the ISO and its grub.cfg
