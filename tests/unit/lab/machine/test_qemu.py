"""The lab machine's direct QEMU command line: Secure Boot firmware behind SMM, or the plain one."""
import pytest

from lab.machine import qemu
from lab.twin.errors import LabError


def _after(argv, flag):
    return [argv[i + 1] for i, word in enumerate(argv) if word == flag]


def test_secure_boot_firmware_runs_with_smm_and_a_secure_variable_flash(tmp_path):
    argv = qemu.Machine(str(tmp_path)).argv()
    assert _after(argv, "-machine") == ["q35,smm=on"]
    assert _after(argv, "-global") == ["driver=cfi.pflash01,property=secure,value=on"]
    drives = _after(argv, "-drive")
    assert drives[0] == "if=pflash,format=raw,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.secboot.fd"
    assert drives[1] == "if=pflash,format=raw,file=%s/OVMF_VARS.fd" % tmp_path
    assert _after(argv, "-accel") == ["tcg"]


def test_the_scratch_nvme_disk_drops_the_guests_flushes(tmp_path):
    # the same disk as the libvirt domain's (test_domain.py): a flush on a busy host must not
    # outlast the guest NVMe driver's command timeout
    drives = _after(qemu.Machine(str(tmp_path)).argv(), "-drive")
    assert drives[2] == "file=%s/nvme0.raw,if=none,id=nvme0,format=raw,cache=unsafe" % tmp_path


def test_the_variable_store_is_a_copy_of_the_template_with_microsofts_keys(tmp_path):
    machine = qemu.Machine(str(tmp_path / "m"))
    assert machine.vars_template == "/usr/share/OVMF/OVMF_VARS_4M.ms.fd"
    if not all(map(qemu.os.path.isfile, qemu.firmware())):
        pytest.skip("ovmf is not installed")
    machine.create()
    with open(machine.vars, "rb") as copy, open(qemu.OVMF_VARS, "rb") as template:
        assert copy.read() == template.read()


def test_secure_boot_off_is_the_plain_firmware_and_the_empty_store_without_the_secure_flash(tmp_path):
    machine = qemu.Machine(str(tmp_path), secure_boot=False)
    argv = machine.argv()
    assert _after(argv, "-machine") == ["q35"] and _after(argv, "-global") == []
    assert _after(argv, "-drive")[0].endswith("file=/usr/share/OVMF/OVMF_CODE_4M.fd")
    assert machine.vars_template == "/usr/share/OVMF/OVMF_VARS_4M.fd"


def test_missing_firmware_is_named_with_its_package(tmp_path, monkeypatch):
    monkeypatch.setattr(qemu, "OVMF_VARS", str(tmp_path / "absent.fd"))
    with pytest.raises(LabError, match="absent.fd is missing; fix: apt install ovmf"):
        qemu.Machine(str(tmp_path / "m")).create()
