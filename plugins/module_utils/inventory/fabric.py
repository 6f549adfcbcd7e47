# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The fabric section: rails, their subnets, MTU and mode, and per-node rail addresses."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.addressing import (
    offset_address, parse_network, rail_offset)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.errors import RackDescriptionError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.schema import (
    field, integer, mapping)

__all__ = ["MODES", "parse_fabric", "node_rails"]

MODES = ("roce", "ib")
# InfiniBand's smallest MTU (256) to the largest Ethernet jumbo frame (9216).
MTU_RANGE = (256, 9216)
_MAC = re.compile(r"^[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){5}$")


def _mode(value, entry):
    if value not in MODES:
        raise RackDescriptionError(entry, "mode %r is unknown" % (value,), "Use one of: %s." % ", ".join(MODES))
    return value


def parse_fabric(desc):
    """Return {'rack_stride', 'rails': [{'name', 'network', 'mtu', 'mode'}]} from ``fabric``."""
    fabric = field(desc, "fabric", "fabric", dict)
    mode = _mode(field(fabric, "mode", "fabric", str, "roce"), "fabric.mode")
    mtu = integer(fabric, "mtu", "fabric", MTU_RANGE[0], MTU_RANGE[1], 4200)
    stride = field(fabric, "rack_stride", "fabric", int, 64)
    if stride < 2:
        raise RackDescriptionError("fabric.rack_stride", "must be at least 2, got %d" % stride,
                                   "Set it above the largest slot number.")
    rails, seen = [], set()
    for pos, rail in enumerate(field(fabric, "rails", "fabric", list)):
        entry = "fabric.rails[%d]" % pos
        name = field(rail, "name", entry, str)
        if name in seen:
            raise RackDescriptionError(entry, "rail name %r is used twice" % name, "Give every rail a unique name.")
        seen.add(name)
        rails.append({
            "name": name,
            "network": parse_network(field(rail, "subnet", entry, str), entry + ".subnet"),
            "mtu": integer(rail, "mtu", entry, MTU_RANGE[0], MTU_RANGE[1], mtu),
            "mode": _mode(field(rail, "mode", entry, str, mode), entry + ".mode"),
        })
    if not rails:
        raise RackDescriptionError("fabric.rails", "no rails are defined", "List at least one rail.")
    return {"rack_stride": stride, "rails": rails}


def _link(sku, node, rail_name, entry):
    """The SKU's link match for the rail (same PCI path on every node), updated by the node's."""
    link = sku.get("links", {}).get(rail_name) or {}
    node_link = mapping(node, "rails", entry).get(rail_name) or {}
    if not isinstance(node_link, dict) or not isinstance(link, dict):
        raise RackDescriptionError("%s.rails.%s" % (entry, rail_name), "expected a mapping with mac or pci_path",
                                   "Write it as {mac: aa:bb:cc:dd:ee:ff} or {pci_path: pci-0000:17:00.0}.")
    link = dict(link)
    link.update(node_link)
    entry = "%s.rails.%s" % (entry, rail_name)
    for key in ("mac", "pci_path", "interface"):
        field(link, key, entry, str, None)
    # Unquoted, YAML 1.1 reads some MACs (10:20:30:40:50:59) as base-60 integers.
    if link.get("mac") is not None and not _MAC.match(link["mac"]):
        raise RackDescriptionError(entry + ".mac", "%r is not a MAC address" % (link["mac"],),
                                   "Write it as six hex pairs in quotes, e.g. mac: \"b8:ce:f6:00:00:07\".")
    return link


def node_rails(fabric, sku, rack_index, slot, node, entry):
    """One entry per rail of the node's SKU, with its deterministic address."""
    offset = rail_offset(rack_index, slot, fabric["rack_stride"])
    result = []
    for rail in fabric["rails"]:
        if rail["name"] not in sku["rails"]:
            continue
        net = rail["network"]
        address = offset_address(net, offset, "%s rail %s" % (entry, rail["name"]))
        link = _link(sku, node, rail["name"], entry)
        result.append({
            "name": rail["name"], "interface": link.get("interface", rail["name"]),
            "address": str(address), "prefix": net.prefixlen, "cidr": "%s/%d" % (address, net.prefixlen),
            "mtu": rail["mtu"], "mode": rail["mode"],
            "mac": link.get("mac"), "pci_path": link.get("pci_path"),
        })
    return result
