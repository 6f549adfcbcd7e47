"""The lab machine as a libvirt domain, for a Redfish BMC (sushy-tools' libvirt driver) to drive.

The same machine as qemu.py's: q35 with SMM, UEFI firmware (OVMF's Secure Boot build, a
``secure`` pflash loader) with its own variable store copied from the template with Microsoft's
keys and Secure Boot on (``secure_boot=False``: the plain build and the empty store), an
NVMe disk with the serial the installer's root-device hints name, a CD drive for virtual
media, user-mode networking (the host's loopback answers at 10.0.2.2; with ``ssh_port`` the
host's 127.0.0.1:ssh_port reaches the guest's sshd, and each of ``forwards`` (address, port)
forwards the host's address:port to the same port in the guest, e.g. slurmd's port on a docker
network's gateway for a slurmctld container) and the serial console in a file.
Software CPU (TCG): KVM guests hang on the CI machines.

libvirt 9.0 has no emulated NVMe disk bus, so the NVMe disk is QEMU arguments
(``<qemu:commandline>``): libvirt does not see it, sushy-tools does not offer it as a boot
device, and it never carries a boot index, so after a one-time boot override is consumed the
firmware follows its own BootOrder (the entry the deploy agent made), as a server does.
QEMU runs as root here (a static DAC label): the disk libvirt does not know is never
relabelled, and the test's folders are private to root.
"""
import xml.etree.ElementTree as ET

from lab.machine.qemu import firmware, nvme_drive

__all__ = ["QEMU_NS", "DOMAIN_PREFIX", "domain_xml", "clear_boot_override", "boot_override"]

QEMU_NS = "http://libvirt.org/schemas/domain/qemu/1.0"
DOMAIN_PREFIX = "gpufleet-lab-"
ET.register_namespace("qemu", QEMU_NS)


def _sub(parent, tag, text=None, **attrs):
    element = ET.SubElement(parent, tag, dict((k.rstrip("_"), str(v)) for k, v in attrs.items()))
    if text is not None:
        element.text = str(text)
    return element


def domain_xml(name, uuid, disk, nvram, console, memory_mib=1536, disk_serial="GPUFLEET0001", tpm=False,
               emulator="/usr/bin/qemu-system-x86_64", ssh_port=None, forwards=(), secure_boot=True):
    """The domain's XML text. ``disk``, ``nvram`` and ``console`` are absolute host paths.
    ``forwards`` ((host address, port) pairs) needs ``ssh_port``: the user-mode NIC they go through."""
    if not name.startswith(DOMAIN_PREFIX):
        raise ValueError("domain name %r must start with %r (lab domains are found and removed by it)"
                         % (name, DOMAIN_PREFIX))
    if "," in disk:
        raise ValueError("disk path %r contains a comma, which QEMU's -drive option cannot take" % disk)
    if forwards and ssh_port is None:
        raise ValueError("forwards %r need ssh_port: only the QEMU user-mode NIC forwards ports" % (forwards,))
    root = ET.Element("domain", {"type": "qemu"})
    _sub(root, "name", name)
    _sub(root, "uuid", uuid)
    _sub(root, "memory", memory_mib, unit="MiB")
    _sub(root, "vcpu", 1)
    os_el = _sub(root, "os")
    _sub(os_el, "type", "hvm", arch="x86_64", machine="q35")
    code, template = firmware(secure_boot)
    # sushy-tools' libvirt driver reports SecureBootEnable from this template (its
    # SUSHY_EMULATOR_SECURE_BOOT_ENABLED_NVRAM, bmc.py) and rewrites both when told to change it
    _sub(os_el, "loader", code, readonly="yes", type="pflash", secure="yes" if secure_boot else "no")
    _sub(os_el, "nvram", nvram, template=template)
    features = _sub(root, "features")
    _sub(features, "acpi")
    if secure_boot:
        # the Secure Boot build refuses to run without SMM, which guards its variable store
        _sub(features, "smm", state="on")
    _sub(root, "cpu", mode="maximum")
    _sub(root, "on_poweroff", "destroy")
    # a guest reboot resets the machine in place; the lab BMC (bmc.py) then applies the
    # one-time override's end by starting it again with the override cleared
    _sub(root, "on_reboot", "restart")
    _sub(root, "on_crash", "destroy")
    devices = _sub(root, "devices")
    _sub(devices, "emulator", emulator)
    # the virtual media drive, empty until an InsertMedia (sushy replaces this element)
    cdrom = _sub(devices, "disk", type="file", device="cdrom")
    _sub(cdrom, "driver", name="qemu", type="raw")
    _sub(cdrom, "target", dev="sda", bus="sata")
    _sub(cdrom, "readonly")
    _sub(cdrom, "address", type="drive", controller=0, bus=0, target=0, unit=0)
    if ssh_port is None:
        net = _sub(devices, "interface", type="user")
        _sub(net, "model", type="virtio")
    serial = _sub(devices, "serial", type="file")
    # append: the console of every boot stays in one file (the BMC restarts the machine)
    _sub(serial, "source", path=console, append="on")
    _sub(serial, "target", port=0)
    console_el = _sub(devices, "console", type="file")
    _sub(console_el, "source", path=console, append="on")
    _sub(console_el, "target", type="serial", port=0)
    if tpm:
        tpm_el = _sub(devices, "tpm", model="tpm-crb")
        _sub(tpm_el, "backend", type="emulator", version="2.0")
    _sub(devices, "memballoon", model="none")
    seclabel = _sub(root, "seclabel", type="static", model="dac", relabel="no")
    _sub(seclabel, "label", "+0:+0")
    commandline = ET.SubElement(root, "{%s}commandline" % QEMU_NS)
    for arg in ("-drive", nvme_drive(disk),
                # a fixed slot on the root complex: left to QEMU it takes slot 1, which libvirt
                # gives to its first PCIe root port, and QEMU refuses to start
                "-device", "nvme,serial=%s,drive=nvme0,bus=pcie.0,addr=0x10" % disk_serial):
        ET.SubElement(commandline, "{%s}arg" % QEMU_NS, {"value": arg})
    if ssh_port is not None:
        # libvirt 9.0 forwards ports of user-mode networking only with the passt backend (not
        # in Debian 12's libvirt): the same user-mode NIC as QEMU arguments, plus the forwards
        hostfwd = ["tcp:127.0.0.1:%d-:22" % int(ssh_port)]
        hostfwd += ["tcp:%s:%d-:%d" % (address, int(port), int(port)) for address, port in forwards]
        for arg in ("-netdev", "user,id=gfnet0," + ",".join("hostfwd=" + spec for spec in hostfwd),
                    "-device", "virtio-net-pci,netdev=gfnet0,bus=pcie.0,addr=0x11"):
            ET.SubElement(commandline, "{%s}arg" % QEMU_NS, {"value": arg})
    ET.indent(root)
    return ET.tostring(root, encoding="unicode")


def _devices(tree):
    devices = tree.find("devices")
    return list(devices) if devices is not None else []


def boot_override(xml):
    """The boot devices the domain's XML orders (``[(device or interface tag, order)]``)."""
    found = []
    for element in _devices(ET.fromstring(xml)):
        for boot in element.findall("boot"):
            found.append((element.get("device") or element.tag, boot.get("order")))
    return found


def clear_boot_override(xml):
    """The XML with every boot order removed (a one-time override consumed), or None if none.

    With no boot index on any device QEMU gives OVMF no boot order, and OVMF boots by its own
    BootOrder variable, the one the deploy agent set: the real machine's behaviour.
    """
    tree = ET.fromstring(xml)
    changed = False
    for element in _devices(tree):
        for boot in element.findall("boot"):
            element.remove(boot)
            changed = True
    return ET.tostring(tree, encoding="unicode") if changed else None
