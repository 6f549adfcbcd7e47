"""The per-node first-boot seed: hostname, the controller's SSH key, the management address.

Nothing else goes in it: the roles configure everything else once the node answers SSH. The
seed is canonical JSON written at the start of the image's ``gpufleet-seed`` partition, padded
with zeros to the partition's end so an older, longer seed never shows through. The golden
image's first-boot unit reads it from ``/dev/disk/by-partlabel/gpufleet-seed``.
"""
import ipaddress
import json
import os
import re

from gpufleet.deploy.errors import DeployError

__all__ = ["SEED_PARTITION", "SCHEMA", "build_seed", "encode_seed", "write_seed"]

SEED_PARTITION = "gpufleet-seed"
SCHEMA = "gpufleet.seed/v1"
_HOSTNAME = re.compile(r"^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")
_KEY = re.compile(r"^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/=]+( \S.*)?$")


def _fail(field, problem, fix):
    raise DeployError("seed", "%s %s; fix: %s" % (field, problem, fix), field=field)


def build_seed(hostname, ssh_key, address=None, gateway=None, dns=()):
    """Validate and return the seed document. ``address`` is CIDR (static) or None (DHCP)."""
    if not isinstance(hostname, str) or not _HOSTNAME.match(hostname):
        _fail("hostname", "%r is not a valid host name" % (hostname,), "lower-case letters, digits and '-'")
    if not isinstance(ssh_key, str) or not _KEY.match(ssh_key.strip()):
        _fail("ssh_key", "is not one OpenSSH public key line", "pass the controller's *.pub key")
    seed = {"schema": SCHEMA, "hostname": hostname, "ssh_authorized_keys": [ssh_key.strip()]}
    if address is not None:
        try:
            seed["address"] = str(ipaddress.ip_interface(address))
        except ValueError:
            _fail("address", "%r is not an address with a prefix" % (address,), "e.g. 10.0.8.21/24")
        if gateway is not None:
            try:
                seed["gateway"] = str(ipaddress.ip_address(gateway))
            except ValueError:
                _fail("gateway", "%r is not an IP address" % (gateway,), "e.g. 10.0.8.1")
        try:
            seed["dns"] = [str(ipaddress.ip_address(item)) for item in dns]
        except ValueError:
            _fail("dns", "%r holds something that is not an IP address" % (list(dns),), "list addresses")
    return seed


def encode_seed(seed):
    return (json.dumps(seed, sort_keys=True) + "\n").encode("utf-8")


def write_seed(disk_path, partition, seed):
    """Write the seed at the partition's start and zero the rest of the partition."""
    data = encode_seed(seed)
    if len(data) > partition["size_bytes"]:
        raise DeployError("seed", "the seed (%d bytes) does not fit partition %s (%d bytes); fix: "
                          "rebuild the image with a larger seed partition"
                          % (len(data), partition["name"], partition["size_bytes"]))
    fd = os.open(disk_path, os.O_RDWR)
    try:
        os.pwrite(fd, data + b"\0" * (partition["size_bytes"] - len(data)), partition["first_byte"])
        os.fsync(fd)
        if os.pread(fd, len(data), partition["first_byte"]) != data:
            raise DeployError("seed", "the seed read back from %s differs from the one written; "
                              "fix: the disk is failing, replace it" % disk_path)
    finally:
        os.close(fd)
