# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Log entries (the SEL and the BMC's event log): LogServices -> each service -> Entries.

The system's log services and those of its managers are read; the newest ``limit`` entries of
all of them (by ``Created``) are returned, newest first. A BMC without LogServices (link absent,
or 404/405/501) gives no entries and a note saying so: a technician must know the log was not
there, not that it was empty. An entry that does not follow the schema (wrong type, a
``Created`` that is not a date) fails the node with a named BmcResponseError: a half-read log
is never handed out as the whole.

Paging follows ``Members@odata.nextLink`` (the Redfish spec's collection paging), at most
``MAX_PAGES`` pages per service; a longer log is cut there and a note says so.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import discovery
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import BmcResponseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.fields import Fields

__all__ = ["log_entries", "entry_facts", "MAX_PAGES", "DEFAULT_LIMIT"]

DEFAULT_LIMIT = 50
MAX_PAGES = 20
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def _epoch(entry, created):
    """``Created`` (ISO 8601, ``Z`` or an offset; no offset: UTC) -> epoch seconds."""
    try:
        when = datetime.datetime.fromisoformat(created[:-1] + "+00:00" if created.endswith("Z") else created)
    except ValueError:
        raise BmcResponseError(
            "BMC of node %s answered %s with Created = %r, expected an ISO 8601 date and time. "
            "Check the BMC firmware's clock settings, or report it so a quirk can cover it."
            % (entry.node, entry.where, created), node=entry.node, url=entry.where, field="Created")
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return (when - _EPOCH).total_seconds()


def entry_facts(entry, service):
    """One LogEntry (Fields) as a plain dict; ``service`` names the log it came from."""
    created = entry.text("Created")
    return dict(service=service, id=entry.text("Id", required=True), created=created,
                created_epoch=_epoch(entry, created) if created else None,
                severity=entry.text("Severity"), message=entry.text("Message"),
                message_id=entry.text("MessageId"), entry_type=entry.text("EntryType"),
                sensor_type=entry.text("SensorType"), entry_code=entry.text("EntryCode"))


def _pages(client, path):
    """The Entries collection's members as Fields (inline when expanded, else one GET each),
    and whether the log had more pages than were read."""
    found, page = [], 0
    while path and page < MAX_PAGES:
        data = Fields(client.get(path), client.node, path)
        for member in data.objects("Members"):
            if member.text("Id") is None:   # a bare link: read the entry itself
                ref = member.text("@odata.id", required=True)
                member = Fields(client.get(ref), client.node, ref)
            found.append(member)
        path, page = data.text("Members@odata.nextLink"), page + 1
    return found, bool(path)


def _services(client, owner_path, what, notes):
    """(name, Entries path) of each log service of ``owner_path``; notes what is missing."""
    owner = client.get(owner_path)
    services_path = discovery.link(owner, "LogServices", node=client.node)
    if not services_path or discovery.optional(client, services_path) is None:
        notes.append("%s %s offers no LogServices" % (what, owner_path))
        return []
    found = []
    for path in discovery.members(client, services_path):
        service = discovery.optional(client, path)
        entries = discovery.link(service or {}, "Entries", node=client.node)
        if not entries or discovery.optional(client, entries) is None:
            notes.append("log service %s has no Entries" % path)
            continue
        found.append((path.rstrip("/").rsplit("/", 1)[-1] if what == "system" else
                      "%s/%s" % (owner_path.rstrip("/").rsplit("/", 1)[-1], path.rstrip("/").rsplit("/", 1)[-1]),
                      entries))
    return found


def log_entries(client, system_path, limit=DEFAULT_LIMIT):
    """``{entries: [newest first, at most limit], notes: [...], services: [...]}``."""
    notes, found, services = [], [], []
    owners = [(system_path, "system")] + [(m, "manager") for m in discovery.managers_of(client, system_path)]
    for owner_path, what in owners:
        for name, entries_path in _services(client, owner_path, what, notes):
            label = "%s:%s" % (what, name)
            services.append(label)
            members, more = _pages(client, entries_path)
            if more:
                notes.append("log %s has more than %d pages; only the first %d were read"
                             % (label, MAX_PAGES, MAX_PAGES))
            found.extend((index, entry_facts(m, label)) for index, m in enumerate(members))
    # newest first; entries without a date after the dated ones, in the BMC's order
    found.sort(key=lambda item: (item[1]["created_epoch"] is None, -(item[1]["created_epoch"] or 0),
                                 -item[0]))
    if not services:
        notes.append("no log entries could be read: the BMC has no log service for this system")
    return dict(entries=[entry for _i, entry in found[:max(0, int(limit))]], notes=notes, services=services)
