import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import ImageError
from gpufleet.image import disk_build


def test_grub_boots_the_roots_kernel_found_by_label_with_a_serial_console():
    cfg = disk_build.grub_cfg("vmlinuz-6.1.0-50-cloud-amd64", "initrd.img-6.1.0-50-cloud-amd64")
    assert "search --no-floppy --label gpufleet-root --set root" in cfg
    assert "linux /boot/vmlinuz-6.1.0-50-cloud-amd64 root=PARTLABEL=gpufleet-root ro" in cfg
    assert "console=ttyS0,115200" in cfg and "initrd /boot/initrd.img-6.1.0-50-cloud-amd64" in cfg


def test_a_root_without_boot_files_is_refused_naming_them_and_the_packages(tmp_path):
    (tmp_path / "boot").mkdir()
    (tmp_path / "boot" / "vmlinuz-6.1.0-50-cloud-amd64").write_bytes(b"k")
    with pytest.raises(ImageError) as err:
        disk_build.boot_files(str(tmp_path), str(tmp_path))
    assert "usr/lib/shim/shimx64.efi.signed" in err.value.msg and "boot/initrd.img-*" in err.value.msg
    assert "shim-signed" in err.value.msg and "boot/vmlinuz-*" not in err.value.msg


def test_the_esp_gets_shim_on_the_removable_path_and_grub_with_its_config(tmp_path):
    for rel in (disk_build.SHIM, disk_build.GRUB, "boot/vmlinuz-6.1.0-9-cloud-amd64",
                "boot/vmlinuz-6.1.0-50-cloud-amd64", "boot/initrd.img-6.1.0-50-cloud-amd64"):
        os.makedirs(os.path.dirname(tmp_path / rel), exist_ok=True)
        (tmp_path / rel).write_bytes(rel.encode())
    esp = disk_build.boot_files(str(tmp_path), str(tmp_path))
    assert esp["EFI/BOOT/BOOTX64.EFI"].endswith(disk_build.SHIM)
    assert esp["EFI/debian/grubx64.efi"].endswith(disk_build.GRUB)
    assert "vmlinuz-6.1.0-9-cloud-amd64" in open(esp["EFI/debian/grub.cfg"]).read()  # sorted: newest name


def test_first_boot_is_installed_enabled_with_only_its_code(tmp_path):
    (tmp_path / "etc/ssh").mkdir(parents=True)
    for name in ("ssh_host_ed25519_key", "ssh_host_ed25519_key.pub", "sshd_config"):
        (tmp_path / "etc/ssh" / name).write_text("x")
    disk_build.add_firstboot(str(tmp_path))
    # no host key baked into the artifact (a secret every node would share); config kept
    assert sorted(os.listdir(tmp_path / "etc/ssh")) == ["sshd_config"]
    assert "PARTLABEL=gpufleet-root  /          ext4" in (tmp_path / "etc/fstab").read_text()
    # a container build's export has no /etc/hosts (the runtime mounted its own): Debian's is added
    assert (tmp_path / "etc/hosts").read_text().startswith("127.0.0.1\tlocalhost\n")
    unit = tmp_path / "etc/systemd/system/gpufleet-firstboot.service"
    assert "ExecStart=/usr/bin/python3 -m gpufleet.deploy.firstboot" in unit.read_text()
    assert os.readlink(tmp_path / "etc/systemd/system/sysinit.target.wants/gpufleet-firstboot.service") == \
        "/etc/systemd/system/gpufleet-firstboot.service"
    assert os.path.islink(tmp_path / "etc/systemd/system/multi-user.target.wants/systemd-networkd.service")
    code = sorted(os.path.relpath(os.path.join(d, f), tmp_path / "opt/gpufleet")
                  for d, _s, files in os.walk(tmp_path / "opt/gpufleet") for f in files)
    assert code == ["ansible_collections/gpufleet/baremetal/plugins/module_utils/__init__.py",
                    "ansible_collections/gpufleet/baremetal/plugins/module_utils/errors.py",
                    "gpufleet/__init__.py", "gpufleet/deploy/errors.py", "gpufleet/deploy/firstboot.py",
                    "gpufleet/deploy/seed.py"]


def test_a_roots_own_etc_hosts_is_kept(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/hosts").write_text("10.0.0.1 site-mirror\n")
    disk_build.add_firstboot(str(tmp_path))
    assert (tmp_path / "etc/hosts").read_text() == "10.0.0.1 site-mirror\n"


def test_the_disk_manifest_is_the_rootfs_builds_with_its_own_artifact_and_subject():
    rootfs = {"version": "v1", "build_id": "v1-docker-abc", "pins_sha256": "p" * 64, "packages": [{"name": "x"}],
              "artifact": {"name": "v1.rootfs.tar.gz", "sha256": "a" * 64, "size": 10},
              "provenance": {"subject": [{"name": "v1.rootfs.tar.gz"}], "predicate": {"k": 1}},
              "signer": {"key_id": "old"}}
    art = {"name": "v1.disk.raw.gz", "sha256": "d" * 64, "size": 5, "disk_bytes": 100}
    out = disk_build.disk_manifest(rootfs, art, {"key_id": "new"})
    assert out["artifact"] == art and out["signer"] == {"key_id": "new"}
    assert out["provenance"] == {"subject": [{"name": "v1.disk.raw.gz", "digest": {"sha256": "d" * 64}}],
                                 "predicate": {"k": 1}}
    assert out["derived_from"] == {"name": "v1.rootfs.tar.gz", "sha256": "a" * 64}
    assert {k: out[k] for k in ("version", "build_id", "pins_sha256", "packages")} == \
        {k: rootfs[k] for k in ("version", "build_id", "pins_sha256", "packages")}
    assert rootfs["artifact"]["name"] == "v1.rootfs.tar.gz"  # the rootfs manifest is not changed
