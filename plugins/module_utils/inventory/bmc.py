# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""BMC endpoints and credentials per node: a pattern, or an address computed from a network."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.addressing import (
    offset_address, parse_network, rail_offset)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.errors import RackDescriptionError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.schema import field, fmt, is_template

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
        if spec.get("network") and spec["network"] not in seen:
            seen.add(spec["network"])
            result.append((entry + ".network", parse_network(spec["network"], entry + ".network")))
    return result


def node_bmc(spec, entry, rack_stride, values):
    """Return (address, system_id) for one node; ``values`` feed the patterns."""
    scheme = field(spec, "scheme", entry, str, "https")
    if spec.get("network"):
        net = parse_network(spec["network"], entry + ".network")
        host = offset_address(net, rail_offset(values["rack_index"], values["slot"], rack_stride), entry)
        port = field(spec, "port", entry, int, 0)
        address = "%s://%s%s" % (scheme, host, ":%d" % port if port else "")
    elif spec.get("address"):
        address = fmt(field(spec, "address", entry, str), entry + ".address", **values)
    else:
        raise RackDescriptionError(entry, "neither bmc.address nor bmc.network is set",
                                   "Set bmc.address (a pattern such as https://bmc-{hostname}) or bmc.network.")
    # YAML reads `system_id: 1` as an integer; Redfish ids are strings.
    system_id = fmt(str(spec.get("system_id", "1")), entry + ".system_id", **values)
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
