"""The machine's disks, as the root-device hints see them.

``lsblk --json`` (util-linux) gives name, size, serial, WWN, model, vendor, rotational and HCTL;
``/dev/disk/by-path`` (udev) gives the stable paths. Only whole, writable disks are candidates:
partitions, CD-ROMs (the installer medium itself), loop devices and read-only disks never are.
"""
import json
import os
import subprocess

from gpufleet.deploy.errors import DeployError

__all__ = ["LSBLK", "parse_lsblk", "by_path_links", "list_disks"]

LSBLK = ["lsblk", "--json", "--bytes", "--nodeps",
         "--output", "NAME,PATH,SIZE,SERIAL,WWN,MODEL,VENDOR,ROTA,TYPE,HCTL,RO"]
_STEP = "disk discovery"


def _text(value):
    return value.strip() if isinstance(value, str) else None


def _flag(value):
    # util-linux 2.38 prints booleans; older ones print "0"/"1" strings.
    return value in (True, 1, "1", "true")


def parse_lsblk(text):
    """lsblk's JSON -> [disk mapping]; DeployError on anything that is not that JSON."""
    try:
        devices = json.loads(text)["blockdevices"]
    except (ValueError, KeyError, TypeError) as exc:
        raise DeployError(_STEP, "cannot read lsblk's output (%s); fix: the installer needs "
                          "util-linux 2.33 or newer" % exc)
    disks = []
    for dev in devices if isinstance(devices, list) else ():
        if not isinstance(dev, dict) or dev.get("type") != "disk" or _flag(dev.get("ro")):
            continue
        try:
            size = int(dev.get("size"))
        except (TypeError, ValueError):
            continue
        disks.append({
            "name": dev.get("path") or "/dev/" + str(dev.get("name")),
            "size": size,
            "serial": _text(dev.get("serial")),
            "wwn": _text(dev.get("wwn")),
            "model": _text(dev.get("model")),
            "vendor": _text(dev.get("vendor")),
            "hctl": _text(dev.get("hctl")),
            "rotational": _flag(dev.get("rota")),
            "by_path": [],
        })
    return disks


def by_path_links(folder="/dev/disk/by-path"):
    """{'/dev/nvme0n1': ['/dev/disk/by-path/pci-0000:00:04.0-nvme-1', ...]} for whole disks."""
    links = {}
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return links  # no udev links (a minimal ramdisk): by_path hints then match nothing
    for name in names:
        if "-part" in name:
            continue
        path = os.path.join(folder, name)
        target = os.path.realpath(path)
        links.setdefault(target, []).append(path)
    return links


def list_disks(run=subprocess.run, by_path_folder="/dev/disk/by-path"):
    """The candidate disks of this machine."""
    try:
        done = run(LSBLK, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DeployError(_STEP, "lsblk did not run (%s); fix: the installer image lacks "
                          "util-linux" % exc)
    if done.returncode != 0:
        raise DeployError(_STEP, "lsblk exited %d: %s" % (done.returncode, done.stderr.strip()))
    disks = parse_lsblk(done.stdout)
    links = by_path_links(by_path_folder)
    for disk in disks:
        disk["by_path"] = links.get(os.path.realpath(disk["name"]), [])
    return disks
