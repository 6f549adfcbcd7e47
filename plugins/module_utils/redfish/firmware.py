# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Firmware inventory: UpdateService -> FirmwareInventory members (id, name, version).

A BMC serving several systems (blade enclosures, the lab's rack emulator) ties items to a
system with ``RelatedItem``; items related to other systems are left out. The collection is
read with ``$expand=.`` when the service root advertises ExpandQuery, which saves one GET
per item; members that come back unexpanded are read one by one.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import discovery

__all__ = ["firmware_inventory"]


def _items(client, inventory):
    root = client.get(discovery.ROOT)
    expand = (root.get("ProtocolFeaturesSupported") or {}).get("ExpandQuery") or {}
    if expand.get("ExpandAll") or expand.get("Levels"):
        data = client.get(inventory + "?$expand=.($levels=1)")
        members = data.get("Members", [])
        if members and all("Id" in m for m in members):
            return members
    return [client.get(p) for p in discovery.members(client, inventory)]


def _related_to(item, system_path):
    """True unless the item names only systems (or their parts) other than ours."""
    related = [r.get("@odata.id", "").rstrip("/") for r in item.get("RelatedItem") or []]
    systems = [r for r in related if "/Systems/" in r]
    ours = system_path.rstrip("/")
    return not systems or any(r == ours or r.startswith(ours + "/") for r in systems)


def firmware_inventory(client, system_path=None):
    """``[{id, name, version, updateable, software_id}]`` or None without an UpdateService."""
    update = discovery.optional(client, discovery.link(client.get(discovery.ROOT), "UpdateService"))
    inventory = discovery.link(update or {}, "FirmwareInventory")
    if not inventory or discovery.optional(client, inventory) is None:
        return None
    result = []
    for item in _items(client, inventory):
        if system_path and not _related_to(item, system_path):
            continue
        result.append(dict(id=item.get("Id"), name=item.get("Name"), version=item.get("Version"),
                           updateable=item.get("Updateable"), software_id=item.get("SoftwareId"),
                           health=(item.get("Status") or {}).get("Health")))
    return sorted(result, key=lambda i: i["id"] or "")
