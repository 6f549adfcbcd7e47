"""Power-on -> installer up -> image written -> reboot on the lab's QEMU machine, split by step.

Builds (or reuses) the installer ISO, assembles a whole-disk image from a root directory
(default: the installer's own cached Debian root, about 450 MB of real files), signs it,
serves it over HTTPS from loopback and boots the machine (OVMF, NVMe, software CPU). Prints
one JSON line: seconds after power-on at which each step first showed on the serial console.

    .venv/bin/python -m benchmarks.machine.install --disk-mib 2048   # from the checkout's root

Host-side times come from polling the console every 0.5 s; the load average is printed too.
"""
import argparse
import glob
import json
import os
import pathlib
import shutil
import subprocess
import tempfile

import gpufleet  # noqa: F401 - installs the collection loader the next import needs
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing
from gpufleet.image import disk as disk_mod
from gpufleet.image import installer as installer_mod
from lab.bmc.pki import ensure_pki
from lab.machine.qemu import HOST_FROM_GUEST, Machine
from lab.machine.serve import ArtifactServer, free_port
from tests.helpers import ROOT
from tests.unit.gpufleet.deploy.disk_factory import signed_disk

MARKS = {"kernel": "Linux version", "installer up": "]: starting", "network up": "network up",
         "manifest verified": "running write {\"disk\"", "image written": "running seed",
         "root grown": "imaged done", "rebooting": "rebooting into the disk"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--disk-mib", type=int, default=2048, help="size of the whole-disk image")
    parser.add_argument("--nvme-mib", type=int, default=4096, help="size of the machine's NVMe disk")
    parser.add_argument("--root", help="root directory for the image (default: the installer's Debian root)")
    args = parser.parse_args()
    work = os.path.join(ROOT, "build", "installer", "work")
    base = tempfile.mkdtemp(prefix="machine-bench-")
    try:
        port = free_port()
        pki = ensure_pki(os.path.join(base, "pki"), [HOST_FROM_GUEST, "127.0.0.1"])
        key = signing.generate_key("ed25519")
        iso = installer_mod.build_installer(
            os.path.join(base, "installer.iso"), signing.public_pem(key.public_key()), ROOT, work,
            ca_pem=open(pki["ca.pem"], "rb").read(),
            kernel_args=["gpufleet.config=https://%s:%d/config.json" % (HOST_FROM_GUEST, port)])
        root = args.root
        if not root:
            root = os.path.join(base, "root")
            os.makedirs(root)
            cached = glob.glob(os.path.join(work, "rootfs-*.tar"))[0]
            subprocess.run(["tar", "-C", root, "-xf", cached], check=True)
        image_path = os.path.join(base, "disk.raw")
        disk_mod.assemble_disk(root, image_path, args.disk_mib)
        served = os.path.join(base, "srv")
        os.makedirs(served)
        with open(image_path, "rb") as handle:
            files, _ = signed_disk(pathlib.Path(served), handle.read(), key=key, version="bench", compress=True)
        artifact = next(name for name in files if name.endswith(".gz"))
        with open(os.path.join(served, "config.json"), "w") as handle:
            json.dump({"node": "bench", "image_url": "https://%s:%d/%s" % (HOST_FROM_GUEST, port, artifact),
                       "image_version": "bench", "root_device": {"serial": "GPUFLEET0001"},
                       "seed": {"hostname": "bench", "ssh_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGsome"
                                "keymaterialxxxxxxxxxxxxxxxxxxxxxxxxx bench"}}, handle)
        size = len(files[artifact])
        # the agent's last progress line: every byte received, gunzipped and placed on the disk
        marks = dict(MARKS, **{"image received": '"bytes": %d, "total": %d' % (size, size)})
        server = ArtifactServer(served, port, pki["server.pem"], pki["server.key"])
        machine = Machine(os.path.join(base, "vm"), disk_mib=args.nvme_mib)
        machine.create()
        console, seen = machine.boot(iso["iso"], until=lambda text: "HALTED" in text, limit=3600,
                                     marks=tuple(marks.values()))
        server.stop()
        result = {"disk_mib": args.disk_mib, "artifact_bytes": size, "iso_bytes": iso["bytes"],
                  "initrd_bytes": iso["initrd_bytes"], "load_average": os.getloadavg(),
                  "imaged": "imaged done" in console,
                  "seconds_after_power_on": {name: seen.get(mark) for name, mark in marks.items()},
                  "total": seen["end"]}
        print(json.dumps(result))
        if not result["imaged"]:
            print(console[-3000:])
            return 1
        return 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
