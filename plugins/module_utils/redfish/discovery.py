# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Follow ``@odata.id`` links and pick collection members by id: the one discovery helper.

Nothing here assumes a vendor layout: every resource is reached from the service root
by its links, so ``/redfish/v1/Systems/1`` and ``/redfish/v1/Systems/SN-0042`` are
found the same way. Results come from the client's per-run GET cache.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    BmcHTTPError, DiscoveryError,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.fields import Fields

__all__ = ["ROOT", "link", "members", "member_ids", "pick_member", "find_system",
           "managers_of", "optional"]

ROOT = "/redfish/v1/"


def link(resource, *keys, **kwargs):
    """The ``@odata.id`` at ``resource[k1][k2]...``, or None when any step is absent.

    A step that is present but not an object (or an id that is not text) is a named error.
    """
    fields = Fields(resource, kwargs.get("node", ""))
    for key in keys[:-1]:
        fields = fields.sub(key)
    return fields.link(keys[-1])


def members(client, collection_path):
    """The member paths of a collection (follows ``Members@odata.nextLink`` pages)."""
    paths = []
    path = collection_path
    while path:
        data = Fields(client.get(path), client.node, path)
        paths.extend(m.text("@odata.id", required=True) for m in data.objects("Members"))
        path = data.text("Members@odata.nextLink")
    return paths


def member_ids(paths):
    return [p.rstrip("/").rsplit("/", 1)[-1] for p in paths]


def _direct(client, collection_path, member_id):
    """``collection/member_id`` when the BMC serves it (one GET instead of a collection scan).

    A redirect within the collection is followed (sushy-tools answers 307 from a system's
    name to its UUID path).
    """
    if not member_id or "/" in member_id:
        return None
    path = collection_path.rstrip("/") + "/" + member_id
    rsp = client.request("GET", path, allow={301, 302, 307, 308, 400, 404, 405, 501})
    if rsp.status in (301, 302, 307, 308):
        target = "/" + rsp.headers.get("location", "").split("://", 1)[-1].split("/", 1)[-1]
        if not target.startswith(collection_path.rstrip("/") + "/"):
            return None
        path, rsp = target, client.request("GET", target, allow={301, 302, 307, 308, 404})
    if rsp.status != 200:
        return None
    data = client.remember(path, rsp)
    own = Fields(data, client.node, path).text("@odata.id") or path
    return path if own.rstrip("/") == path.rstrip("/") else None


def pick_member(client, collection_path, member_id, what):
    """The member whose path ends in ``member_id`` (or whose Id/UUID/Name matches).

    With ``member_id`` empty and exactly one member, that member. Raises DiscoveryError
    naming the available ids otherwise.
    """
    direct = _direct(client, collection_path, member_id)
    if direct:
        return direct
    paths = members(client, collection_path)
    ids = member_ids(paths)
    if not member_id:
        if len(paths) == 1:
            return paths[0]
        raise DiscoveryError(
            "BMC of node %s has %d %s (%s); set system_id to choose one."
            % (client.node, len(paths), what, _short(ids)), node=client.node, available=ids)
    for path, mid in zip(paths, ids):
        if mid == member_id:
            return path
    for path in paths:  # slower: match on the resource's own Id, UUID or Name
        data = client.get(path)
        if member_id in (data.get("Id"), data.get("UUID"), data.get("Name")):
            return path
    raise DiscoveryError(
        "%s %r not found on the BMC of node %s at %s. Available: %s. Fix the system id in "
        "the inventory." % (what.rstrip("s").capitalize(), member_id, client.node,
                            client.baseuri, _short(ids)),
        node=client.node, available=ids)


def find_system(client, system_id=None):
    """Path of the ComputerSystem ``system_id`` (by link from the root, never assumed).

    Remembered on the client, so steps sharing one session (redfish_provision) find the
    system once.
    """
    found = client.discovered.get(("system", system_id))
    if found:
        return found
    systems = link(client.get(ROOT), "Systems", node=client.node)
    if not systems:
        raise DiscoveryError("BMC of node %s at %s has no Systems collection in its service "
                             "root; it is not a server BMC." % (client.node, client.baseuri),
                             node=client.node)
    found = client.discovered[("system", system_id)] = pick_member(client, systems, system_id,
                                                                   "systems")
    return found


def managers_of(client, system_path):
    """Manager paths for a system: Links.ManagedBy, else every manager of the service."""
    system = Fields(client.get(system_path), client.node, system_path)
    paths = [m.text("@odata.id", required=True) for m in system.sub("Links").objects("ManagedBy")]
    if paths:
        return paths
    managers = link(client.get(ROOT), "Managers", node=client.node)
    return members(client, managers) if managers else []


def optional(client, path):
    """GET ``path`` or None when the BMC answers 404/405/501 (resource not implemented)."""
    if not path:
        return None
    try:
        return client.get(path)
    except BmcHTTPError as exc:
        if exc.details.get("status") in (404, 405, 501):
            return None
        raise


def _short(ids, limit=10):
    text = ", ".join(ids[:limit])
    return text + (", ... (%d in all)" % len(ids) if len(ids) > limit else "") or "none"
