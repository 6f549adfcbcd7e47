# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Expand a compact rack description into hosts, groups and per-node variables.

Pure Python: the inventory plugin reads the file with ``load_description`` (the strict YAML
reader: no duplicate keys, bounded aliases and depth, UTF-8 only) and calls ``build_hosts``;
unit tests call them with texts and dicts. Every error names the entry (``racks[1].nodes[3]``)
or the YAML line, and the fix.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.addressing import (
    check_overlaps, endpoint, is_dns_name)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.bmc import (
    bmc_networks, credentials, merge_bmc, node_bmc)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.errors import RackDescriptionError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.fabric import node_rails, parse_fabric
from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.schema import (
    field, fmt, integer, is_template, mapping)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.strict_yaml import (
    StrictYamlError, load_file, loads)

__all__ = ["build_hosts", "load_description", "parse_description"]

EMPTY_FIX = ("Write a rack description: plugin: gpufleet.baremetal.rack, then fleet, fabric, skus and racks "
             "(see docs/inventory.md).")


def _checked_document(read):
    """The mapping ``read()`` returns; YAML errors keep their line, an empty file is refused."""
    try:
        desc = read()
    except StrictYamlError as exc:
        where = "line %d" % exc.line if exc.line else "(file)"
        raise RackDescriptionError(where, exc.problem, exc.fix[:1].upper() + exc.fix[1:] + ".")
    if desc is None:
        raise RackDescriptionError("(file)", "the file is empty", EMPTY_FIX)
    if not isinstance(desc, dict):
        raise RackDescriptionError("(top level)", "the description is %s, not a mapping" % type(desc).__name__,
                                   EMPTY_FIX)
    return desc


def parse_description(text, source="<rack description>"):
    """The rack description in ``text`` (str or UTF-8 bytes), read strictly."""
    return _checked_document(lambda: loads(text, source))


def load_description(path):
    """The rack description in the file ``path``, read strictly."""
    return _checked_document(lambda: load_file(path))


def _skus(desc, rail_names):
    skus = {}
    for name, sku in field(desc, "skus", "skus", dict).items():
        entry = "skus.%s" % name
        rails = field(sku, "rails", entry, list, list(rail_names))
        unknown = [r for r in rails if r not in rail_names]
        if unknown:
            raise RackDescriptionError(entry + ".rails", "rails %s are not defined in fabric.rails" % unknown,
                                       "Use rail names from fabric.rails: %s." % ", ".join(rail_names))
        skus[name] = {
            "rails": rails, "gpu_count": integer(sku, "gpu_count", entry, 0, None, 0),
            "gpu_type": field(sku, "gpu_type", entry, str, "none"),
            "features": field(sku, "features", entry, list, []),
            "gate_profile": field(sku, "gate_profile", entry, str, name),
            "links": mapping(sku, "links", entry),
        }
    return skus


def _nodes(rack, entry, stride):
    slots = integer(rack, "slots", entry, 1)
    if slots >= stride:  # checked before expanding "all": a huge count must not fill memory
        raise RackDescriptionError(entry, "%d slots do not fit fabric.rack_stride %d" % (slots, stride),
                                   "Raise fabric.rack_stride above the slot count.")
    nodes = rack.get("nodes")
    if nodes in (None, "all"):
        return slots, [{"slot": s} for s in range(1, slots + 1)]
    if not isinstance(nodes, list):
        raise RackDescriptionError(entry + ".nodes", "expected a list of nodes or 'all'", "List the populated slots.")
    return slots, nodes


def _host_vars(layers, values):
    """Merge pass-through vars; plain strings get the node's placeholders, Jinja stays as is."""
    merged = {}
    for entry, layer in layers:
        for key, value in layer.items():
            if not isinstance(key, (str, type(u""))) or not key.isidentifier():
                raise RackDescriptionError("%s.host_vars" % entry, "%r is not a variable name" % (key,),
                                           "Use letters, digits and underscores, not starting with a digit.")
            if isinstance(value, str) and not is_template(value):
                value = fmt(value, "%s.host_vars.%s" % (entry, key), **values)
            merged[key] = value
    return merged


class _Builder:
    def __init__(self, desc, allow_plaintext):
        if not isinstance(desc, dict):
            raise RackDescriptionError("(top level)", "the description is not a mapping", "Check the YAML file.")
        self.fleet = field(desc, "fleet", "fleet", dict)
        self.fabric = parse_fabric(desc)
        self.skus = _skus(desc, [r["name"] for r in self.fabric["rails"]])
        self.racks = field(desc, "racks", "racks", list)
        self.allow_plaintext = allow_plaintext
        self.hosts = []
        self.bmc_specs = []

    def build(self):
        indexes = {}
        for pos, rack in enumerate(self.racks):
            entry = "racks[%d]" % pos
            name = field(rack, "name", entry, str)
            index = integer(rack, "index", entry, 0)
            if index in indexes:
                raise RackDescriptionError(entry, "rack index %d is also used by rack %s" % (index, indexes[index]),
                                           "Give every rack a unique index; addresses derive from it.")
            indexes[index] = name
            self._rack(rack, "%s (%s)" % (entry, name), name, index)
        if not self.hosts:  # an empty inventory would let a play end "no hosts matched", exit 0
            raise RackDescriptionError("racks", "the description defines no hosts",
                                       "List at least one rack with populated slots (nodes: all or a list of slots).")
        nets = [(r["name"], r["network"]) for r in self.fabric["rails"]]
        check_overlaps(nets + bmc_networks(self.bmc_specs))
        _check_unique(self.hosts)
        return self.hosts

    def _rack(self, rack, entry, name, index):
        slots, nodes = _nodes(rack, entry, self.fabric["rack_stride"])
        for pos, node in enumerate(nodes):
            node_entry = "%s.nodes[%d]" % (entry, pos)
            slot = field(node, "slot", node_entry, int)
            if not 1 <= slot <= slots:
                raise RackDescriptionError(node_entry, "slot %d is out of range 1..%d of rack %s" % (slot, slots, name),
                                           "Use a slot from 1 to the rack's slots count, or raise slots.")
            self.hosts.append(self._node(rack, node, (entry, node_entry), name, index, slot))

    def _sku(self, rack, node, entry):
        sku = (field(node, "sku", entry, str, None) or field(rack, "sku", entry, str, None)
               or field(self.fleet, "sku", "fleet", str, None))
        if sku not in self.skus:
            raise RackDescriptionError(entry, "SKU %r is not defined" % (sku,),
                                       "Set sku on the node, its rack or fleet to one of: %s." % ", ".join(sorted(self.skus)))
        return sku

    def _bmc_layers(self, rack, node, rack_entry, entry):
        """(level, bmc spec) from the fleet to the node: the node's own settings come last."""
        return [("fleet.bmc", mapping(self.fleet, "bmc", "fleet")), (rack_entry + ".bmc", mapping(rack, "bmc", rack_entry)),
                (entry + ".bmc", mapping(node, "bmc", entry))]

    def _node(self, rack, node, entries, rack_name, index, slot):
        rack_entry, entry = entries
        values = {"rack": rack_name, "rack_index": index, "slot": slot}
        values["hostname"] = _host_name(field(self.fleet, "hostname_pattern", "fleet", str), values, entry)
        domain = _domain(self.fleet)
        values["fqdn"] = "%s.%s" % (values["hostname"], domain) if domain else values["hostname"]
        sku_name = self._sku(rack, node, entry)
        sku = self.skus[sku_name]
        bmc_layers = self._bmc_layers(rack, node, rack_entry, entry)
        bmc_spec = merge_bmc(*[spec for _level, spec in bmc_layers])
        self.bmc_specs.append((entry + ".bmc", bmc_spec))
        bmc_address, system_id = node_bmc(bmc_layers, entry + ".bmc", self.fabric["rack_stride"], values)
        username, password = credentials(bmc_spec, entry + ".bmc", self.allow_plaintext)
        hostvars = {
            "gpufleet_hostname": values["hostname"], "gpufleet_fqdn": values["fqdn"], "gpufleet_domain": domain,
            "gpufleet_rack": rack_name, "gpufleet_rack_index": index, "gpufleet_slot": slot,
            "gpufleet_sku": sku_name, "gpufleet_gpu_count": sku["gpu_count"], "gpufleet_gpu_type": sku["gpu_type"],
            "gpufleet_features": list(sku["features"]),
            "gpufleet_image_version": (field(node, "image_version", entry, str, None)
                                       or field(rack, "image_version", rack_entry, str, None)
                                       or field(self.fleet, "image_version", "fleet", str)),
            "gpufleet_gate_profile": field(node, "gate_profile", entry, str, None) or sku["gate_profile"],
            "gpufleet_bmc_address": bmc_address, "gpufleet_bmc_system_id": system_id,
            "gpufleet_bmc_username": username, "gpufleet_bmc_password": password,
            "gpufleet_bmc_validate_certs": field(bmc_spec, "validate_certs", entry + ".bmc", bool, True),
            "gpufleet_rails": node_rails(self.fabric, sku, index, slot, node, entry),
        }
        layers = [("fleet", mapping(self.fleet, "host_vars", "fleet")), (entry, mapping(rack, "host_vars", entry)),
                  (entry, mapping(node, "host_vars", entry))]
        hostvars.update(_host_vars(layers, values))
        groups = [_group("rack_" + rack_name), _group("sku_" + sku_name)]
        return {"name": values["hostname"], "entry": entry, "groups": groups, "vars": hostvars}


def _host_name(pattern, values, entry):
    """The node's host name: it goes into SSH, container and scheduler names, so a DNS name."""
    name = fmt(pattern, "fleet.hostname_pattern", **values)
    if not is_dns_name(name) or "." in name:
        raise RackDescriptionError("fleet.hostname_pattern", "gives %r for %s, not a host name" % (name, entry),
                                   "Make rack names and the pattern give letters, digits, - and _ only, "
                                   "at most 63 characters; put the domain in fleet.domain.")
    return name


def _domain(fleet):
    domain = field(fleet, "domain", "fleet", str, "")
    if domain and not is_dns_name(domain):
        raise RackDescriptionError("fleet.domain", "%r is not a DNS domain" % domain,
                                   "Write it as dot-separated labels of letters, digits and -, e.g. dc1.example.com.")
    return domain


def _group(name):
    """Ansible group names allow letters, digits and underscores only."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _identities(host):
    """(kind, comparison key, shown) of everything that must be unique to one node."""
    hv = host["vars"]
    bmc = (hv["gpufleet_bmc_address"], hv["gpufleet_bmc_system_id"])
    # Compared by endpoint, so https://10.0.0.5 and https://10.0.0.5:443/ are the same BMC.
    keys = [("hostname", host["name"], host["name"]),
            ("BMC", (endpoint(bmc[0], host["entry"] + ".bmc.address"), bmc[1]), bmc)]
    keys += [("rail address", rail["address"], rail["address"]) for rail in hv["gpufleet_rails"]]
    keys += [("rail MAC", rail["mac"].lower(), rail["mac"].lower()) for rail in hv["gpufleet_rails"] if rail["mac"]]
    return keys


def _check_unique(hosts):
    """Hostnames, BMC (endpoint, system id) pairs and rail addresses are unique fleet-wide."""
    seen = {}
    for host in hosts:
        for kind, key, shown in _identities(host):
            if (kind, key) in seen:
                raise RackDescriptionError(
                    host["entry"], "%s %s is also used by %s" % (kind, shown, seen[(kind, key)]),
                    "Make the hostname pattern, BMC endpoints and rail addressing unique per node.")
            seen[(kind, key)] = host["entry"]


def build_hosts(desc, allow_plaintext_credentials=False):
    """Return [{'name', 'entry', 'groups', 'vars'}] for every node of the description."""
    return _Builder(desc, allow_plaintext_credentials).build()
