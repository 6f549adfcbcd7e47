"""The golden image's first-boot step: apply the seed the deploy agent wrote, once.

Reads the ``gpufleet-seed`` partition (canonical JSON, zero padded) and writes exactly what the
seed holds: the host name, root's authorized SSH key and, for a static address, a
systemd-networkd file for the first wired interface; then makes the node's own SSH host keys
(the image carries none). Everything else is the roles' job once the
node answers SSH. A seed that is missing or malformed stops the unit with the reason (the node
stays without the controller's key, so nothing half-configured joins). Applying twice gives the
same files (the unit runs once per boot until ``/etc/gpufleet/seed-applied`` matches the seed).
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys

from gpufleet.deploy.errors import DeployError
from gpufleet.deploy.seed import SCHEMA, SEED_PARTITION

__all__ = ["SEED_DEVICE", "read_seed", "apply_seed", "main"]

SEED_DEVICE = "/dev/disk/by-partlabel/" + SEED_PARTITION
_MAX = 64 << 10
_NETWORK_FILE = "etc/systemd/network/10-gpufleet-mgmt.network"


def read_seed(device=SEED_DEVICE):
    """The seed document from the seed partition; DeployError naming what is wrong."""
    try:
        with open(device, "rb") as handle:
            raw = handle.read(_MAX)
    except OSError as exc:
        raise DeployError("first boot", "cannot read the seed at %s (%s); fix: image the node "
                          "with the gpufleet installer" % (device, exc.strerror))
    text = raw.split(b"\0", 1)[0]
    try:
        seed = json.loads(text.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise DeployError("first boot", "the seed at %s is not a JSON document; fix: re-image the node" % device)
    if not isinstance(seed, dict) or seed.get("schema") != SCHEMA:
        raise DeployError("first boot", "the seed at %s is not a %s document" % (device, SCHEMA))
    if not isinstance(seed.get("hostname"), str) or not isinstance(seed.get("ssh_authorized_keys"), list):
        raise DeployError("first boot", "the seed at %s lacks hostname or ssh_authorized_keys" % device)
    return seed


def _write(root, rel, text, mode):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".gpufleet-tmp"
    with open(tmp, "w") as handle:
        handle.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _network(seed):
    lines = ["[Match]", "Type=ether", "Name=en* eth*", "", "[Network]"]
    if "address" in seed:
        lines.append("Address=%s" % seed["address"])
        if seed.get("gateway"):
            lines.append("Gateway=%s" % seed["gateway"])
        lines += ["DNS=%s" % server for server in seed.get("dns", [])]
    else:
        lines.append("DHCP=yes")
    return "\n".join(lines) + "\n"


def apply_seed(seed, root="/"):
    """Write the seed's files under ``root``; return the list of files written."""
    files = {
        "etc/hostname": (seed["hostname"] + "\n", 0o644),
        "root/.ssh/authorized_keys": ("".join(key + "\n" for key in seed["ssh_authorized_keys"]), 0o600),
        _NETWORK_FILE: (_network(seed), 0o644),
        "etc/gpufleet/seed-applied": (hashlib.sha256(json.dumps(seed, sort_keys=True).encode()).hexdigest()
                                      + "\n", 0o644),
    }
    os.makedirs(os.path.join(root, "root", ".ssh"), mode=0o700, exist_ok=True)
    for rel, (text, mode) in sorted(files.items()):
        _write(root, rel, text, mode)
    return sorted(files)


def _running_hostname(name, proc="/proc/sys/kernel/hostname"):
    """systemd set the host name from the image's /etc/hostname before this unit ran."""
    try:
        with open(proc, "w") as handle:
            handle.write(name)
    except OSError as exc:
        raise DeployError("first boot", "cannot set the host name to %s (%s)" % (name, exc.strerror))


def _host_keys(root, run=subprocess.run):
    """This node's own SSH host keys (the image carries none)."""
    try:
        done = run(["ssh-keygen", "-A", "-f", root], capture_output=True, text=True, check=False)
    except OSError as exc:
        raise DeployError("first boot", "ssh-keygen did not run (%s); fix: the image needs openssh-server" % exc)
    if done.returncode != 0:
        raise DeployError("first boot", "ssh-keygen -A failed: %s" % (done.stderr or done.stdout).strip())


def main(argv=None):
    parser = argparse.ArgumentParser(prog="gpufleet-firstboot", description=(
        "Apply the per-node seed the gpufleet installer wrote: host name, root's SSH key, the "
        "management address."))
    parser.add_argument("--device", default=SEED_DEVICE)
    parser.add_argument("--root", default="/")
    args = parser.parse_args(argv)
    try:
        seed = read_seed(args.device)
        written = apply_seed(seed, args.root)
        _host_keys(args.root)
        if os.path.abspath(args.root) == "/":
            _running_hostname(seed["hostname"])
    except DeployError as exc:
        print("gpufleet-firstboot: %s" % exc.msg, file=sys.stderr)
        return 1
    print("gpufleet-firstboot: applied the seed (%s)" % ", ".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
