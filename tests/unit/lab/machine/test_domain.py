"""The lab machine's libvirt domain XML, and the one-time boot override's end (clear_boot_override)."""
import xml.etree.ElementTree as ET

import pytest

from lab.machine import domain
from lab.machine.qemu import OVMF_CODE, OVMF_CODE_NO_SB, OVMF_VARS, OVMF_VARS_NO_KEYS

UUID = "8b3f0c2e-6d0a-4b7e-9a51-2f4c1d9e7a10"
Q = "{%s}" % domain.QEMU_NS


def _xml(**kwargs):
    args = dict(name="gpufleet-lab-m1", uuid=UUID, disk="/srv/m1/nvme0.raw", nvram="/srv/m1/VARS.fd",
                console="/srv/m1/console.log")
    args.update(kwargs)
    return domain.domain_xml(**args)


def test_the_domain_is_a_tcg_q35_uefi_machine_with_its_own_variable_store():
    tree = ET.fromstring(_xml(memory_mib=1536))
    assert tree.get("type") == "qemu"  # TCG, never KVM
    assert tree.findtext("name") == "gpufleet-lab-m1" and tree.findtext("uuid") == UUID
    assert tree.find("memory").get("unit") == "MiB" and tree.findtext("memory") == "1536"
    assert tree.findtext("vcpu") == "1"
    assert tree.find("os/type").get("machine") == "q35"
    loader = tree.find("os/loader")
    assert loader.text == OVMF_CODE and loader.get("type") == "pflash" and loader.get("readonly") == "yes"
    nvram = tree.find("os/nvram")
    assert nvram.text == "/srv/m1/VARS.fd" and nvram.get("template") == OVMF_VARS


def test_the_firmware_enforces_secure_boot_with_microsofts_keys_behind_smm():
    tree = ET.fromstring(_xml())
    loader = tree.find("os/loader")
    assert loader.text == "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd" and loader.get("secure") == "yes"
    assert tree.find("os/nvram").get("template") == "/usr/share/OVMF/OVMF_VARS_4M.ms.fd"
    assert tree.find("features/smm").get("state") == "on"


def test_secure_boot_off_is_the_plain_firmware_with_the_empty_variable_store():
    tree = ET.fromstring(_xml(secure_boot=False))
    loader = tree.find("os/loader")
    assert loader.text == OVMF_CODE_NO_SB and loader.get("secure") == "no"
    assert tree.find("os/nvram").get("template") == OVMF_VARS_NO_KEYS
    assert tree.find("features/smm") is None


def test_the_nvme_disk_is_qemu_arguments_with_the_serial_the_root_device_hints_use():
    tree = ET.fromstring(_xml(disk_serial="GPUFLEET0042"))
    args = [arg.get("value") for arg in tree.find(Q + "commandline").findall(Q + "arg")]
    assert args[0:2] == ["-drive", "file=/srv/m1/nvme0.raw,if=none,id=nvme0,format=raw,cache=unsafe"]
    assert args[2] == "-device"
    options = args[3].split(",")
    assert options[0] == "nvme" and "serial=GPUFLEET0042" in options and "drive=nvme0" in options
    assert not any(option.startswith("bootindex") for option in options)  # the firmware's BootOrder decides
    # libvirt knows no disk but the CD drive
    assert [d.get("device") for d in tree.findall("devices/disk")] == ["cdrom"]


def test_the_cd_drive_is_an_empty_read_only_sata_drive_for_virtual_media():
    cdrom = ET.fromstring(_xml()).find("devices/disk")
    assert cdrom.find("target").get("bus") == "sata" and cdrom.find("readonly") is not None
    assert cdrom.find("source") is None and cdrom.find("boot") is None


def test_user_networking_and_the_console_file_kept_across_boots():
    tree = ET.fromstring(_xml())
    assert tree.find("devices/interface").get("type") == "user"  # the host's loopback is 10.0.2.2
    for tag in ("serial", "console"):
        source = tree.find("devices/%s/source" % tag)
        assert source.get("path") == "/srv/m1/console.log" and source.get("append") == "on"


def test_a_tpm_only_when_asked():
    assert ET.fromstring(_xml()).find("devices/tpm") is None
    tpm = ET.fromstring(_xml(tpm=True)).find("devices/tpm")
    assert tpm.get("model") == "tpm-crb" and tpm.find("backend").get("version") == "2.0"


@pytest.mark.parametrize("kwargs, word", [({"name": "m1"}, "gpufleet-lab-"),
                                          ({"disk": "/srv/a,b/nvme0.raw"}, "comma")])
def test_bad_names_and_paths_are_refused(kwargs, word):
    with pytest.raises(ValueError, match=word):
        _xml(**kwargs)


def _with_cd_first():
    tree = ET.fromstring(_xml())
    ET.SubElement(tree.find("devices/disk"), "boot", {"order": "1"})
    ET.SubElement(tree.find("devices/interface"), "boot", {"order": "2"})
    return ET.tostring(tree, encoding="unicode")


def test_an_override_is_seen_and_cleared_from_every_device():
    xml = _with_cd_first()
    assert domain.boot_override(xml) == [("cdrom", "1"), ("interface", "2")]
    cleared = domain.clear_boot_override(xml)
    assert domain.boot_override(cleared) == []
    # nothing else changed: the media stays inserted, as on a server
    assert ET.fromstring(cleared).find("devices/disk").get("device") == "cdrom"
    assert ET.fromstring(cleared).find(Q + "commandline") is not None


def test_no_override_means_nothing_to_redefine():
    assert domain.clear_boot_override(_xml()) is None


def test_an_ssh_port_replaces_the_libvirt_nic_by_a_user_mode_nic_forwarding_loopback_to_port_22():
    plain = ET.fromstring(_xml())
    assert plain.find("devices/interface").get("type") == "user"
    assert "hostfwd" not in _xml()
    tree = ET.fromstring(_xml(ssh_port=2222))
    assert tree.find("devices/interface") is None          # one NIC, not two
    args = [arg.get("value") for arg in tree.find(Q + "commandline").findall(Q + "arg")]
    netdev = args[args.index("-netdev") + 1]
    assert netdev.startswith("user,") and "hostfwd=tcp:127.0.0.1:2222-:22" in netdev.split(",")
    nic = [a for a in args if a.startswith("virtio-net-pci,")]
    assert nic and "netdev=gfnet0" in nic[0].split(",") and "netdev=gfnet0" not in args[3]


def test_forwards_add_host_address_ports_to_the_same_guest_ports_beside_the_ssh_forward():
    tree = ET.fromstring(_xml(ssh_port=2222, forwards=[("172.30.0.1", 46818)]))
    args = [arg.get("value") for arg in tree.find(Q + "commandline").findall(Q + "arg")]
    options = args[args.index("-netdev") + 1].split(",")
    assert [o for o in options if o.startswith("hostfwd=")] == ["hostfwd=tcp:127.0.0.1:2222-:22",
                                                                "hostfwd=tcp:172.30.0.1:46818-:46818"]


def test_forwards_without_the_user_mode_nic_are_refused():
    with pytest.raises(ValueError, match="need ssh_port"):
        _xml(forwards=[("172.30.0.1", 46818)])
