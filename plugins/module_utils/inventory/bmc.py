# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""BMC endpoints and credentials per node: an address (pattern), or one computed from a network.

Precedence: the most specific level (node, then rack, then fleet) that sets ``address`` or
``network`` decides how the node's BMC address is made, so a node's explicit address is never
replaced by one derived from the fleet's network. One level setting both is refused.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.addressing import (
    SCHEMES, endpoint, offset_address, parse_network, rail_offset, url_host)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.errors import RackDescriptionError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.schema import (
    field, fmt, integer, is_template)

__all__ = ["merge_bmc", "bmc_networks", "node_bmc", "credentials"]


def merge_bmc(*specs):
    """Later specs (rack, node) override earlier ones (fleet) key by key."""
    merged = {}
    for spec in specs:
        merged.update(spec or {})
    return merged


def bmc_networks(specs):
    """[(entry, network)] for every distinct BMC ``network`` among (entry, spec) pairs."""
    seen, result = set(), []
    for entry, spec in specs:
        # Checked even where a node's own address overrides it: a declared network must not overlap.
        network = field(spec, "network", entry, str, None)
        if network and network not in seen:
            seen.add(network)
            result.append((entry + ".network", parse_network(network, entry + ".network")))
    return result


def address_source(layers):
    """(level, spec) of the most specific ``(level, bmc spec)`` that sets address or network."""
    for level, spec in reversed(layers):
        has_address, has_network = spec.get("address") is not None, spec.get("network") is not None
        if has_address and has_network:
            raise RackDescriptionError(
                level, "sets both address and network",
                "Keep one: address for an explicit endpoint (or a pattern), network for an address per "
                "node computed from rack and slot. A rack or node may override the fleet's choice.")
        if has_address or has_network:
            return level, spec
    return None, {}


def _derived_address(spec, entry, rack_stride, values):
    scheme = field(spec, "scheme", entry, str, "https")
    if scheme not in SCHEMES:
        raise RackDescriptionError(entry + ".scheme", "scheme %r is not one of %s" % (scheme, ", ".join(sorted(SCHEMES))),
                                   "Use https (or http for a lab BMC).")
    net = parse_network(field(spec, "network", entry, str), entry + ".network")
    host = offset_address(net, rail_offset(values["rack_index"], values["slot"], rack_stride), entry)
    port = integer(spec, "port", entry, 0, 65535, 0)
    return "%s://%s%s" % (scheme, url_host(host), ":%d" % port if port else "")


def node_bmc(layers, entry, rack_stride, values):
    """Return (address, system_id) for one node; ``layers`` are (level, bmc spec), fleet first.

    ``values`` feed the patterns. The address is checked (IP addresses with ``ipaddress``).
    """
    level, source = address_source(layers)
    if level is None:
        raise RackDescriptionError(entry, "neither bmc.address nor bmc.network is set",
                                   "Set bmc.address (a pattern such as https://bmc-{hostname}) or bmc.network.")
    merged = merge_bmc(*[spec for _level, spec in layers])
    if source.get("address") is not None:
        address = fmt(field(source, "address", level, str), level + ".address", **values)
    else:
        address = _derived_address(dict(merged, network=source["network"]), entry, rack_stride, values)
    endpoint(address, "%s.address (from %s)" % (entry, level) if level != entry else entry + ".address")
    system_id = merged.get("system_id", "1")
    if isinstance(system_id, bool) or not isinstance(system_id, (int, str, type(u""))):
        raise RackDescriptionError(entry + ".system_id", "expected a string, got %r" % (system_id,),
                                   "Write the Redfish system id as a string, e.g. \"1\" or \"{hostname}\".")
    # YAML reads `system_id: 1` as an integer; Redfish ids are strings.
    system_id = fmt(str(system_id), entry + ".system_id", **values)
    return address, system_id


def credentials(spec, entry, allow_plaintext):
    """(username, password); the password must be a vault/variable reference, never inline."""
    creds = field(spec, "credentials", entry, dict)
    username = field(creds, "username", entry + ".credentials", str)
    password = field(creds, "password", entry + ".credentials", str)
    if not is_template(password) and not allow_plaintext:
        raise RackDescriptionError(
            entry + ".credentials.password", "the password is written inline in plain text",
            "Reference a vaulted variable instead, e.g. password: \"{{ vault_bmc_password }}\".")
    return username, password
