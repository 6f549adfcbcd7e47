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
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.fields import Fields

__all__ = ["firmware_inventory"]


def _items(client, inventory):
    """Every inventory item as Fields: expanded in one GET when the BMC offers it."""
    root = Fields(client.get(discovery.ROOT), client.node, discovery.ROOT)
    expand = root.sub("ProtocolFeaturesSupported").sub("ExpandQuery")
    if expand.get("ExpandAll", "flag") or expand.get("Levels", "flag"):
        path = inventory + "?$expand=.($levels=1)"
        members = Fields(client.get(path), client.node, path).objects("Members")
        if members and all("Id" in m.data for m in members):
            return members
    return [Fields(client.get(p), client.node, p) for p in discovery.members(client, inventory)]


def _related_to(item, system_path):
    """True unless the item names only systems (or their parts) other than ours."""
    related = [r.text("@odata.id", required=True).rstrip("/") for r in item.objects("RelatedItem")]
    systems = [r for r in related if "/Systems/" in r]
    ours = system_path.rstrip("/")
    return not systems or any(r == ours or r.startswith(ours + "/") for r in systems)


def firmware_inventory(client, system_path=None):
    """``[{id, name, version, updateable, software_id}]`` or None without an UpdateService."""
    root = client.get(discovery.ROOT)
    update = discovery.optional(client, discovery.link(root, "UpdateService", node=client.node))
    inventory = discovery.link(update or {}, "FirmwareInventory", node=client.node)
    if not inventory or discovery.optional(client, inventory) is None:
        return None
    result = []
    for item in _items(client, inventory):
        if system_path and not _related_to(item, system_path):
            continue
        result.append(dict(id=item.text("Id", required=True), name=item.text("Name"),
                           version=item.text("Version"), updateable=item.get("Updateable", "flag"),
                           software_id=item.text("SoftwareId"),
                           health=item.sub("Status").text("Health")))
    return sorted(result, key=lambda i: i["id"])
