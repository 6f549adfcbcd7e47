# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The day-2 persistence tracks in the ledger: one row per (node, source, kind).

The capacity controller counts how often a health signal was seen (gpufleet.day2.persistence);
kept only in memory, a restarted controller would count from zero and act later. Rows are plain
dicts here (this package never imports the controller): node, source, kind, reason, first_seen,
seen (epoch seconds of the sightings in the window, stored as a JSON list), run_start (None when
the signal is absent now). ``replace_tracks`` writes the whole set in one transaction, so a
reader never sees half of a pass's tracks.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError

__all__ = ["replace_tracks", "tracks"]

_COLUMNS = ("node", "source", "kind", "reason", "first_seen", "seen", "run_start")


def _check(row):
    missing = [k for k in ("node", "source", "kind", "reason", "first_seen") if row.get(k) in (None, "")]
    if missing:
        raise LedgerError("Day-2 track %r lacks %s; every track needs node, source, kind, reason and "
                          "first_seen." % (row, ", ".join(missing)), node=row.get("node"))


def replace_tracks(ledger, rows):
    """Store ``rows`` (dicts as above) as the only day-2 tracks; returns how many."""
    rows = list(rows)
    for row in rows:
        _check(row)
    now = ledger.clock()
    with ledger.transaction() as cur:
        cur.execute("DELETE FROM day2_tracks")
        for row in rows:
            cur.execute(
                "INSERT INTO day2_tracks (node, source, kind, reason, first_seen, seen, run_start, "
                "updated_at) VALUES (?,?,?,?,?,?,?,?)",
                (row["node"], row["source"], row["kind"], row["reason"], float(row["first_seen"]),
                 json.dumps([float(t) for t in row.get("seen") or ()]),
                 None if row.get("run_start") is None else float(row["run_start"]), now))
    return len(rows)


def tracks(ledger):
    """Every stored track as a dict, ordered by node, source, kind."""
    with ledger.transaction(write=False) as cur:
        found = cur.execute("SELECT %s FROM day2_tracks ORDER BY node, source, kind"
                            % ", ".join(_COLUMNS)).fetchall()
    result = []
    for row in found:
        record = dict(zip(_COLUMNS, row))
        try:
            record["seen"] = tuple(float(t) for t in json.loads(record["seen"]))
        except (TypeError, ValueError):
            raise LedgerError("Day-2 track %s/%s/%s in the ledger at %s has unreadable sightings %r; "
                              "delete the row (the track starts counting again)."
                              % (record["node"], record["source"], record["kind"], ledger.path,
                                 record["seen"]), node=record["node"])
        result.append(record)
    return result
