import json
import os
import subprocess

import pytest

from gpufleet.deploy.disks import LSBLK, list_disks, parse_lsblk
from gpufleet.deploy.errors import DeployError

# The shape util-linux 2.38 (Debian 12) prints for `lsblk --json --bytes --nodeps --output ...`.
LSBLK_JSON = json.dumps({"blockdevices": [
    {"name": "nvme0n1", "path": "/dev/nvme0n1", "size": 1024209543168, "serial": "S5GXNX0R100001",
     "wwn": "eui.0025388b91c00001", "model": "SAMSUNG MZQL2960HCJR-00A07", "vendor": None, "rota": False,
     "type": "disk", "hctl": None, "ro": False},
    {"name": "sr0", "path": "/dev/sr0", "size": 412090368, "serial": "QM00001", "wwn": None, "model": "QEMU DVD-ROM",
     "vendor": "QEMU    ", "rota": True, "type": "rom", "hctl": "1:0:0:0", "ro": False},
    {"name": "loop0", "path": "/dev/loop0", "size": 0, "serial": None, "wwn": None, "model": None, "vendor": None,
     "rota": False, "type": "loop", "hctl": None, "ro": False},
    {"name": "sdb", "path": "/dev/sdb", "size": 7776000, "serial": "RO1", "wwn": None, "model": "USB", "vendor": "x",
     "rota": True, "type": "disk", "hctl": "2:0:0:0", "ro": True},
    {"name": "sda", "path": "/dev/sda", "size": "480103981056", "serial": "BTYF0001  ", "wwn": "0x55cd2e414f000001",
     "model": "INTEL SSDSC2KB48", "vendor": "ATA     ", "rota": "1", "type": "disk", "hctl": "0:0:0:0", "ro": "0"},
]})


def test_only_whole_writable_disks_are_candidates_with_their_identifiers_trimmed():
    disks = parse_lsblk(LSBLK_JSON)
    assert [d["name"] for d in disks] == ["/dev/nvme0n1", "/dev/sda"]
    nvme, sda = disks
    assert nvme["serial"] == "S5GXNX0R100001" and nvme["rotational"] is False and nvme["vendor"] is None
    assert sda["size"] == 480103981056 and sda["serial"] == "BTYF0001" and sda["vendor"] == "ATA"
    assert sda["rotational"] is True


@pytest.mark.parametrize("text", ["", "not json", "[]", '{"other": []}'])
def test_output_that_is_not_lsblk_json_fails(text):
    with pytest.raises(DeployError, match="cannot read lsblk's output"):
        parse_lsblk(text)


def test_list_disks_adds_by_path_links_of_whole_disks(tmp_path):
    disk = tmp_path / "nvme0n1"
    disk.write_bytes(b"")
    links = tmp_path / "by-path"
    links.mkdir()
    os.symlink(disk, links / "pci-0000:41:00.0-nvme-1")
    os.symlink(disk, links / "pci-0000:41:00.0-nvme-1-part1")
    text = json.dumps({"blockdevices": [{"name": "nvme0n1", "path": str(disk), "size": 10, "type": "disk"}]})

    def run(argv, **_kw):
        assert argv == LSBLK
        return subprocess.CompletedProcess(argv, 0, text, "")

    [found] = list_disks(run, str(links))
    assert found["by_path"] == [str(links / "pci-0000:41:00.0-nvme-1")]


def test_lsblk_missing_or_failing_fails_with_the_reason():
    def missing(argv, **_kw):
        raise FileNotFoundError(2, "No such file or directory", "lsblk")

    with pytest.raises(DeployError, match="lsblk did not run"):
        list_disks(missing)
    with pytest.raises(DeployError, match="lsblk exited 1: boom"):
        list_disks(lambda argv, **_kw: subprocess.CompletedProcess(argv, 1, "", "boom\n"))
