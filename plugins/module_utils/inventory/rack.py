# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Expand a compact rack description into hosts, groups and per-node variables.

Pure Python: the inventory plugin loads the YAML and calls ``build_hosts``; unit tests
call it with dicts. Every error names the entry (``racks[1].nodes[3]``) and the fix.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.addressing import check_overlaps
from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.bmc import (
    bmc_networks, credentials, merge_bmc, node_bmc)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.errors import RackDescriptionError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.fabric import node_rails, parse_fabric
from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.schema import (
    field, fmt, integer, is_template, mapping)

__all__ = ["build_hosts"]


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
                                           "Fix the slot or the rack's slots count.")
            self.hosts.append(self._node(rack, node, node_entry, name, index, slot))

    def _sku(self, rack, node, entry):
        sku = (field(node, "sku", entry, str, None) or field(rack, "sku", entry, str, None)
               or field(self.fleet, "sku", "fleet", str, None))
        if sku not in self.skus:
            raise RackDescriptionError(entry, "SKU %r is not defined" % (sku,),
                                       "Set sku on the node, its rack or fleet to one of: %s." % ", ".join(sorted(self.skus)))
        return sku

    def _node(self, rack, node, entry, rack_name, index, slot):
        values = {"rack": rack_name, "rack_index": index, "slot": slot}
        values["hostname"] = fmt(field(self.fleet, "hostname_pattern", "fleet", str), "fleet.hostname_pattern", **values)
        domain = field(self.fleet, "domain", "fleet", str, "")
        values["fqdn"] = "%s.%s" % (values["hostname"], domain) if domain else values["hostname"]
        sku_name = self._sku(rack, node, entry)
        sku = self.skus[sku_name]
        bmc_spec = merge_bmc(mapping(self.fleet, "bmc", "fleet"), mapping(rack, "bmc", entry), mapping(node, "bmc", entry))
        self.bmc_specs.append((entry + ".bmc", bmc_spec))
        bmc_address, system_id = node_bmc(bmc_spec, entry + ".bmc", self.fabric["rack_stride"], values)
        username, password = credentials(bmc_spec, entry + ".bmc", self.allow_plaintext)
        hostvars = {
            "gpufleet_hostname": values["hostname"], "gpufleet_fqdn": values["fqdn"], "gpufleet_domain": domain,
            "gpufleet_rack": rack_name, "gpufleet_rack_index": index, "gpufleet_slot": slot,
            "gpufleet_sku": sku_name, "gpufleet_gpu_count": sku["gpu_count"], "gpufleet_gpu_type": sku["gpu_type"],
            "gpufleet_features": list(sku["features"]),
            "gpufleet_image_version": str(node.get("image_version") or rack.get("image_version")
                                          or field(self.fleet, "image_version", "fleet", str)),
            "gpufleet_gate_profile": node.get("gate_profile") or sku["gate_profile"],
            "gpufleet_bmc_address": bmc_address, "gpufleet_bmc_system_id": system_id,
            "gpufleet_bmc_username": username, "gpufleet_bmc_password": password,
            "gpufleet_bmc_validate_certs": bool(bmc_spec.get("validate_certs", True)),
            "gpufleet_rails": node_rails(self.fabric, sku, index, slot, node, entry),
        }
        layers = [("fleet", mapping(self.fleet, "host_vars", "fleet")), (entry, mapping(rack, "host_vars", entry)),
                  (entry, mapping(node, "host_vars", entry))]
        hostvars.update(_host_vars(layers, values))
        groups = [_group("rack_" + rack_name), _group("sku_" + sku_name)]
        return {"name": values["hostname"], "entry": entry, "groups": groups, "vars": hostvars}


def _group(name):
    """Ansible group names allow letters, digits and underscores only."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _check_unique(hosts):
    """Hostnames, BMC (address, system id) pairs and rail addresses are unique fleet-wide."""
    seen = {}
    for host in hosts:
        hv = host["vars"]
        keys = [("hostname", host["name"]), ("BMC", (hv["gpufleet_bmc_address"], hv["gpufleet_bmc_system_id"]))]
        keys += [("rail address", rail["address"]) for rail in hv["gpufleet_rails"]]
        keys += [("rail MAC", rail["mac"].lower()) for rail in hv["gpufleet_rails"] if rail["mac"]]
        for kind, key in keys:
            if (kind, key) in seen:
                raise RackDescriptionError(
                    host["entry"], "%s %s is also used by %s" % (kind, key, seen[(kind, key)]),
                    "Make the hostname pattern, BMC endpoints and rail addressing unique per node.")
            seen[(kind, key)] = host["entry"]


def build_hosts(desc, allow_plaintext_credentials=False):
    """Return [{'name', 'entry', 'groups', 'vars'}] for every node of the description."""
    return _Builder(desc, allow_plaintext_credentials).build()
