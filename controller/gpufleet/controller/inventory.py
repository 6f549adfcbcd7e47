"""The rack inventory as the controller needs it: every host, its groups, its SKU and where
it sits on the fabric (rack, fabric set).

Read once per process with ``ansible-inventory --list`` (the collection's rack plugin does
the work), so a node the ledger never saw still counts as cold supply of its pool.
"""
import json
import os
import sys
from dataclasses import dataclass
from typing import Dict, Tuple

from gpufleet.controller.demand import run_command
from gpufleet.controller.errors import ControllerError, SchedulerOutputError
from gpufleet.playbook_runner import runner_env

__all__ = ["Host", "parse_inventory", "load_inventory", "fabric_places"]


@dataclass(frozen=True)
class Host:
    name: str
    groups: Tuple[str, ...]
    sku: str = ""
    features: Tuple[str, ...] = ()
    image_version: str = ""
    rack: str = ""          # gpufleet_rack (the rack plugin sets it)
    fabric_set: str = ""    # gpufleet_fabric_set; "" = the pool is the fabric set (docs/day2.md)


def _plain(value):
    """ansible-inventory marks untrusted strings {"__ansible_unsafe": text}; keep the text."""
    if isinstance(value, dict) and "__ansible_unsafe" in value:
        return value["__ansible_unsafe"]
    return value


def _label(hostvars, key, host):
    """A host variable that names a place (rack, fabric set): text or a number, else refused."""
    value = _plain(hostvars.get(key))
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ControllerError("Host %s: %s is %r (a %s); it must be a name such as 'su1'. Fix the "
                              "inventory (rack description host_vars or group_vars)."
                              % (host, key, value, type(value).__name__))
    return str(value)


def parse_inventory(text):
    """host name -> Host from ``ansible-inventory --list`` JSON."""
    try:
        doc = json.loads(text)
        hostvars = doc["_meta"]["hostvars"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ControllerError("ansible-inventory --list printed no usable inventory (%s): check the "
                              "inventory file with `ansible-inventory -i FILE --graph`." % exc)
    groups = {}
    for group, body in doc.items():
        if group == "_meta" or not isinstance(body, dict):
            continue
        for host in body.get("hosts") or []:
            groups.setdefault(host, []).append(group)
    return {name: Host(name=name, groups=tuple(sorted(groups.get(name, ()))),
                       sku=str(_plain(hv.get("gpufleet_sku")) or ""),
                       features=tuple(_plain(f) for f in hv.get("gpufleet_features") or ()),
                       image_version=str(_plain(hv.get("gpufleet_image_version")) or ""),
                       rack=_label(hv, "gpufleet_rack", name),
                       fabric_set=_label(hv, "gpufleet_fabric_set", name))
            for name, hv in hostvars.items()}


def fabric_places(hosts):
    """{host: (fabric set, rack)} for the day-2 stage's fabric peers (gpufleet.day2.stage)."""
    return {name: (getattr(h, "fabric_set", ""), getattr(h, "rack", "")) for name, h in hosts.items()}


def load_inventory(path, timeout=120.0) -> Dict[str, Host]:
    tool = os.path.join(os.path.dirname(sys.executable), "ansible-inventory")
    os.environ.update(runner_env())
    try:
        text = run_command([tool if os.path.exists(tool) else "ansible-inventory", "-i", path, "--list"], timeout)
    except SchedulerOutputError as exc:
        raise ControllerError("Cannot read the inventory %s: %s" % (path, exc))
    return parse_inventory(text)
