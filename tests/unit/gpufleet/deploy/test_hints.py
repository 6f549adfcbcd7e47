import pytest

from gpufleet.deploy.errors import DeployError
from gpufleet.deploy.hints import GIB, pick_disk

NVME0 = {"name": "/dev/nvme0n1", "size": 960 * GIB, "serial": "S5GXNX0R100001", "wwn": "eui.0025388b91c00001",
         "model": "SAMSUNG MZQL2960HCJR-00A07", "vendor": None, "hctl": None, "rotational": False,
         "by_path": ["/dev/disk/by-path/pci-0000:41:00.0-nvme-1"]}
NVME1 = dict(NVME0, name="/dev/nvme1n1", size=3840 * GIB, serial="S5GXNX0R100002", wwn="eui.0025388b91c00002",
             model="SAMSUNG MZQL23T8HCLS-00A07", by_path=["/dev/disk/by-path/pci-0000:42:00.0-nvme-1"])
SDA = dict(NVME0, name="/dev/sda", size=480 * GIB, serial="BTYF0001", wwn="0x55cd2e414f000001", model="INTEL SSDSC2KB48",
           vendor="ATA", hctl="0:0:0:0", rotational=True, by_path=["/dev/disk/by-path/pci-0000:00:17.0-ata-1"])
DISKS = [NVME0, NVME1, SDA]


@pytest.mark.parametrize("hints, expected", [
    ({"serial": "S5GXNX0R100002"}, NVME1),
    ({"serial": "s== S5GXNX0R100001"}, NVME0),
    ({"wwn": "0x55cd2e414f000001"}, SDA),
    ({"model": "<in> MZQL23T8"}, NVME1),
    ({"size": ">= 1000"}, NVME1),
    ({"size": 480}, SDA),
    ({"size": "<= 960", "rotational": False}, NVME0),
    ({"by_path": "/dev/disk/by-path/pci-0000:42:00.0-nvme-1"}, NVME1),
    ({"name": "<or> /dev/sdb <or> /dev/sda"}, SDA),
    ({"hctl": "0:0:0:0"}, SDA),
])
def test_picks_the_one_disk_every_hint_matches(hints, expected):
    assert pick_disk(DISKS, hints) is expected


def test_refuses_when_several_disks_match_and_names_them():
    with pytest.raises(DeployError) as err:
        pick_disk(DISKS, {"model": "<in> SAMSUNG"})
    assert "2 disks match" in err.value.msg and "/dev/nvme0n1" in err.value.msg and "/dev/nvme1n1" in err.value.msg
    assert "refusing to guess" in err.value.msg


def test_refuses_when_no_disk_matches_and_lists_what_the_machine_has():
    with pytest.raises(DeployError) as err:
        pick_disk(DISKS, {"serial": "NOPE"})
    assert "no disk matches" in err.value.msg and "S5GXNX0R100002" in err.value.msg
    assert err.value.step == "root device hints"


def test_a_hint_on_a_value_the_disk_does_not_report_never_matches():
    with pytest.raises(DeployError, match="no disk matches"):
        pick_disk([NVME0], {"vendor": "<in> S"})  # NVMe reports no vendor


@pytest.mark.parametrize("hints, field", [
    ({}, "no hints"), (None, "no hints"), ({"colour": "red"}, "unknown hint 'colour'"),
    ({"size": "about 1T"}, "hint 'size'"), ({"size": True}, "hint 'size'"), ({"serial": ""}, "hint 'serial'"),
    ({"serial": 12}, "hint 'serial'"), ({"rotational": "maybe"}, "hint 'rotational'"),
])
def test_bad_hints_are_refused_naming_the_hint(hints, field):
    with pytest.raises(DeployError, match=field):
        pick_disk(DISKS, hints)
