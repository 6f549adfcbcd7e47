"""Lab BMC config: racks of emulated systems, one sushy-tools process per rack.

YAML shape (see docs/lab-bmc.md)::

    state_dir: build/lab-bmc        # PKI, htpasswd, per-rack emulator state, logs, pids
    username: admin                 # lab-only credentials, written to an htpasswd file
    password: gpufleet-lab          # or password_file: a file holding it (the twin lab
                                    # writes a random one per lab, mode 0600)
    tls: true                       # serve HTTPS with a CA generated into state_dir/pki
    hook_url: null                  # POST every event here as JSON
    events_file: null               # and append it to this JSONL file (default
                                    # <state_dir>/events.jsonl)
    power_delay: [1, 11]            # seconds before a power change lands (fake driver)
    vmedia_fetch: head              # head | full | none: how the BMC checks an image URL
    health_dir: null                # LAB SIMULATION: a file <health_dir>/<node> holding
                                    # "Warning" or "Critical" makes that system report it
                                    # (`gpufleet lab fault NODE bmc_critical`)
    racks:
      - name: r1
        address: 127.0.10.1
        port: 8443
        firmware: {BIOS: "2.1.0", BMC: "1.4.2"}   # rack default
        nodes:                                   # explicit nodes ...
          - {name: r1-n01, firmware: {BIOS: "2.0.9"}}
        node_count: 8                            # ... or generated r1-n01..r1-n08
        power_cycle: true                        # false: answer PowerCycle as plain
                                                 # sushy-tools does (not offered)
"""
import os
import uuid

__all__ = ["load", "generate", "rack_of", "nodes_of", "node_uuid", "DEFAULTS"]

DEFAULTS = {
    "state_dir": "build/lab-bmc",
    "username": "admin",
    "password": "gpufleet-lab",
    "tls": True,
    "hook_url": None,
    "events_file": None,
    "power_delay": [1, 11],
    "vmedia_fetch": "head",
    "apply_interval": 1.0,
    "health_dir": None,
}
DEFAULT_FIRMWARE = {"BIOS": "2.1.0", "BMC": "1.4.2"}


class ConfigError(Exception):
    """The lab BMC config is unusable; the message says which key and how to fix it."""


def node_uuid(name):
    """Stable UUID per node name, so inventories and the emulator agree across restarts."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "gpufleet-lab-bmc/" + name))


def _read(path):
    """The config's YAML through the project's strict reader (a key written twice, non-UTF-8
    text, deep nesting or a device file is a ConfigError naming the line and the fix)."""
    import gpufleet  # noqa: F401  (installs Ansible's collection loader; see gpufleet.collection)
    from ansible_collections.gpufleet.baremetal.plugins.module_utils import strict_yaml

    try:
        data = strict_yaml.load_file(path)
    except strict_yaml.StrictYamlError as exc:
        raise ConfigError(exc.msg) from None
    if not isinstance(data, (dict, type(None))):
        raise ConfigError("%s: the top level is a %s, not a mapping; fix: write the keys of docs/lab-bmc.md"
                          % (path, type(data).__name__))
    return data or {}


def load(path):
    data = _read(path)
    cfg = dict(DEFAULTS)
    cfg.update(data)
    if cfg.get("password_file"):
        cfg["password"] = _read_password(path, cfg["password_file"])
    if not cfg.get("racks"):
        raise ConfigError("%s has no racks; add a racks: list (see docs/lab-bmc.md)" % path)
    base = os.path.dirname(os.path.abspath(path))
    if not os.path.isabs(cfg["state_dir"]):
        cfg["state_dir"] = os.path.normpath(os.path.join(_repo_root(base), cfg["state_dir"]))
    if not cfg.get("events_file"):
        cfg["events_file"] = os.path.join(cfg["state_dir"], "events.jsonl")
    elif not os.path.isabs(cfg["events_file"]):
        cfg["events_file"] = os.path.join(_repo_root(base), cfg["events_file"])
    return cfg


def _read_password(config_path, password_file):
    try:
        with open(password_file) as handle:
            password = handle.read().strip()
    except OSError as exc:
        raise ConfigError("%s: password_file %s cannot be read (%s); point it at the lab's secret file "
                          "(gpufleet lab up writes <state_dir>/secrets/bmc-password)"
                          % (config_path, password_file, exc.strerror or exc))
    if not password:
        raise ConfigError("%s: password_file %s is empty; write the BMC password into it" % (config_path, password_file))
    return password


def _repo_root(start):
    """State paths are relative to the checkout (where .git or galaxy.yml is), else the config."""
    here = start
    while here != os.path.dirname(here):
        if os.path.exists(os.path.join(here, "galaxy.yml")):
            return here
        here = os.path.dirname(here)
    return start


def rack_of(cfg, name):
    for rack in cfg["racks"]:
        if rack["name"] == name:
            return rack
    raise ConfigError("rack %r is not in the config; racks: %s"
                      % (name, ", ".join(r["name"] for r in cfg["racks"])))


def nodes_of(rack):
    """Full node entries of a rack: name, uuid, firmware, power_state."""
    firmware = dict(DEFAULT_FIRMWARE, **(rack.get("firmware") or {}))
    entries = list(rack.get("nodes") or [])
    count = rack.get("node_count", 0)
    width = max(2, len(str(count)))
    named = set(e["name"] for e in entries)
    for index in range(1, count + 1):
        name = "%s-n%0*d" % (rack["name"], width, index)
        if name not in named:
            entries.append({"name": name})
    nodes = []
    for entry in entries:
        nodes.append({
            "name": entry["name"],
            "uuid": entry.get("uuid") or node_uuid(entry["name"]),
            "firmware": dict(firmware, **(entry.get("firmware") or {})),
            "power_state": entry.get("power_state", "Off"),
            "mac": entry.get("mac") or _mac(entry["name"]),
        })
    return nodes


def _mac(name):
    digest = uuid.uuid5(uuid.NAMESPACE_URL, "mac/" + name).hex
    return "52:54:00:%s:%s:%s" % (digest[0:2], digest[2:4], digest[4:6])


def generate(racks=1, nodes_per_rack=8, first_address=1, port=8443, prefix="r",
             network="127.0.10."):
    """A config dict with ``racks`` racks on <network><first_address + i>."""
    return dict(DEFAULTS, racks=[
        {"name": "%s%d" % (prefix, i + 1), "address": "%s%d" % (network, first_address + i),
         "port": port, "node_count": nodes_per_rack}
        for i in range(racks)
    ])
