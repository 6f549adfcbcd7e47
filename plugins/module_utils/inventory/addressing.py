# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Deterministic addressing: one address per rail from (rack index, slot).

On every rail, rack ``i`` owns the block of ``rack_stride`` addresses starting at
``network + i * rack_stride`` and slot ``s`` takes offset ``s`` in that block, so a node's
address never depends on which other nodes are present, and re-racking a node changes
its addresses only when its rack or slot changes.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress

from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.errors import RackDescriptionError

__all__ = ["parse_network", "offset_address", "rail_offset", "check_overlaps"]


def parse_network(text, entry):
    """Parse ``10.200.0.0/16`` (strict: host bits must be zero)."""
    try:
        return ipaddress.ip_network(u"%s" % text, strict=True)
    except (ValueError, TypeError) as exc:
        raise RackDescriptionError(
            entry, "%r is not a network in CIDR form (%s)" % (text, exc),
            "Write it as network/prefix with host bits zero, e.g. 10.200.0.0/16.")


def rail_offset(rack_index, slot, rack_stride):
    """Offset of a node inside every rail network."""
    return rack_index * rack_stride + slot


def offset_address(network, offset, entry):
    """The ``offset``-th address of ``network``; it must be a usable host address."""
    last_usable = network.num_addresses - 2 if network.prefixlen < network.max_prefixlen - 1 else network.num_addresses - 1
    if offset < 1 or offset > last_usable:
        raise RackDescriptionError(
            entry, "offset %d falls outside the usable hosts of %s (1..%d)" % (offset, network, last_usable),
            "Use a larger network, a smaller fabric.rack_stride or a lower rack index.")
    return network.network_address + offset


def check_overlaps(named_networks):
    """Fail on the first pair of overlapping networks; ``named_networks`` is [(name, net)]."""
    for pos, (name, net) in enumerate(named_networks):
        for other_name, other in named_networks[pos + 1:]:
            if net.version == other.version and net.overlaps(other):
                raise RackDescriptionError(
                    name, "network %s overlaps %s of %s" % (net, other, other_name),
                    "Give every rail and the BMC network its own non-overlapping subnet.")
