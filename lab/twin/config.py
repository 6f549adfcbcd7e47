"""Lab configuration: sizes, loopback addresses, names; derived node list.

``load(path, **overrides)`` returns a LabConfig; every path in it is absolute
(relative ones are taken from the repository root). Addresses must stay inside the
lab's loopback range 127.0.20.0-127.0.29.255.
"""
import ipaddress
import os

from lab.twin.errors import LabError  # first: it imports gpufleet, which installs the collection loader
from ansible_collections.gpufleet.baremetal.plugins.module_utils import strict_yaml
from ansible_collections.gpufleet.baremetal.plugins.module_utils.strict_yaml import StrictYamlError
from lab.twin.config_schema import validate
from lab.twin import secrets as lab_secrets

__all__ = ["LabConfig", "Node", "load", "REPO_ROOT", "DEFAULT_CONFIG"]

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_CONFIG = os.path.join(REPO_ROOT, "lab", "config", "default.yml")
_LOW, _HIGH = ipaddress.ip_address("127.0.20.0"), ipaddress.ip_address("127.0.29.255")
MAX_RACKS = 200


class Node:
    """One emulated server: name, rack, slot and its BMC endpoint."""

    def __init__(self, name, rack, slot, bmc_address, bmc_port):
        self.name, self.rack, self.slot = name, rack, slot
        self.bmc_address, self.bmc_port = bmc_address, bmc_port

    @property
    def bmc_url(self):
        return "https://%s:%d" % (self.bmc_address, self.bmc_port)

    def as_dict(self):
        return {"name": self.name, "rack": self.rack, "slot": self.slot, "bmc_url": self.bmc_url}


def _abs(path):
    return path if os.path.isabs(path) else os.path.join(REPO_ROOT, path)


def _check_address(address, what):
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        raise LabError("Lab config: %s %r is not an IP address. Use one in 127.0.20.0-127.0.29.255."
                       % (what, address))
    if not _LOW <= ip <= _HIGH:
        raise LabError("Lab config: %s %s is outside the lab's loopback range 127.0.20.0-127.0.29.255. "
                       "Pick an address inside it." % (what, address))
    return address


class LabConfig:
    """The parsed lab config with derived values (nodes, racks, URLs, paths)."""

    def __init__(self, raw):
        self.raw = raw
        self.racks = int(raw["racks"])
        self.nodes_per_rack = int(raw["nodes_per_rack"])
        if not 1 <= self.racks <= MAX_RACKS or not 1 <= self.nodes_per_rack <= 1000:
            raise LabError("Lab config: racks must be 1-%d and nodes_per_rack 1-1000 (got %s x %s)."
                           % (MAX_RACKS, self.racks, self.nodes_per_rack))
        self.sku = raw.get("sku", "lab")
        self.state_dir = _abs(raw["state_dir"])
        self.bmc = dict(raw["bmc"])
        self.manager = dict(raw["manager"])
        self.docker = dict(raw["docker"])
        self.slurm = dict(raw["slurm"])
        self.hwsim = dict(raw.get("hwsim") or {})
        self.images_root = _abs(self.manager["images_root"])
        self.artifacts_root = self.path("artifacts")
        self.image_public_key = _abs(self.manager["image_public_key"])
        _check_address(self.manager["address"], "manager.address")
        self.nodes = self._derive_nodes(raw["hostname_pattern"])

    def _derive_nodes(self, pattern):
        nodes = []
        for rack in range(1, self.racks + 1):
            address = _check_address(self.bmc["address_pattern"].format(rack=rack),
                                     "bmc.address_pattern (rack %d)" % rack)
            for slot in range(1, self.nodes_per_rack + 1):
                name = pattern.format(rack=rack, slot=slot)
                nodes.append(Node(name, "r%d" % rack, slot, address, int(self.bmc["port"])))
        return nodes

    def node(self, name):
        for node in self.nodes:
            if node.name == name:
                return node
        raise LabError("Lab node %r does not exist. Lab nodes: %s." % (name, ", ".join(n.name for n in self.nodes)))

    @property
    def bmc_password_file(self):
        """The lab's BMC password file: random per lab, 0600. A ``bmc.password`` in the config
        is moved into it, so no config or vars file the lab writes holds the password."""
        explicit = self.bmc.get("password")
        path = lab_secrets.secret_path(self.state_dir, lab_secrets.BMC_PASSWORD)
        if explicit and (not os.path.exists(path) or lab_secrets.read_secret(self.state_dir, lab_secrets.BMC_PASSWORD)
                         != str(explicit)):
            return lab_secrets.store_secret(self.state_dir, lab_secrets.BMC_PASSWORD, str(explicit))
        return lab_secrets.ensure_secret(self.state_dir, lab_secrets.BMC_PASSWORD)

    @property
    def bmc_password(self):
        self.bmc_password_file  # generated on first use
        return lab_secrets.read_secret(self.state_dir, lab_secrets.BMC_PASSWORD)

    def public_raw(self):
        """The config as written into the state dir: without a password."""
        raw = dict(self.raw)
        raw["bmc"] = dict((k, v) for k, v in self.bmc.items() if k != "password")
        return raw

    def path(self, *parts):
        return os.path.join(self.state_dir, *parts)

    @property
    def hook_url(self):
        return "http://%s:%d/events" % (self.manager["address"], int(self.manager["hook_port"]))

    @property
    def artifact_url(self):
        return "http://%s:%d" % (self.manager["address"], int(self.manager["artifact_port"]))

    @property
    def powersave_dir(self):
        """Where the lab slurmctld's power-saving programs leave requests (lab/twin/powersave.py)."""
        return self.path("powersave")

    @property
    def controller_spool(self):
        """The capacity controller's request spool in the lab (`controller run --lab` reads it)."""
        return self.path("controller-spool")

    @property
    def bmc_state_dir(self):
        return self.path("bmc")

    @property
    def bmc_ca(self):
        return self.path("bmc", "pki", "ca.pem")

    def media_url(self, version):
        """Virtual media URL of a built image version (served by the manager)."""
        return "%s/%s/%s.rootfs.tar.gz" % (self.artifact_url, version, version)

    def container(self, node_name):
        """Container name of a node; matches ansible_host in inventories/lab.rack.yml."""
        return self.docker["container_prefix"] + node_name

    def slurm_hostlist(self):
        return ",".join(n.name for n in self.nodes)


def load(path=None, **overrides):
    """Read the YAML config (default lab/config/default.yml) and apply non-None overrides."""
    path = path or DEFAULT_CONFIG
    try:    # the project's strict reader: a key written twice is an error, not the last one winning
        raw = strict_yaml.load_file(path) or {}
    except StrictYamlError as exc:
        raise LabError("Cannot read the lab config %s." % exc.msg, config=path) from None
    if not isinstance(raw, dict):
        raise LabError("Lab config %s: the top level is %r, not a mapping. Copy lab/config/default.yml and edit it."
                       % (path, raw), config=path)
    raw.update({k: v for k, v in overrides.items() if v is not None})
    validate(raw, path)
    try:
        return LabConfig(raw)
    except LabError as exc:
        raise LabError("Lab config %s: %s" % (path, exc.msg.replace("Lab config: ", "", 1)), config=path)
