# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Ledger administration: migrate, copy (SQLite -> PostgreSQL), consistency check.

The controller package exposes these as ``gpufleet ledger migrate|copy|check``.

- ``migrate`` brings a ledger to this collection's schema version (1 -> 2 -> 3 -> 4) in one
  transaction and says what it did. An SQLite path must hold a ledger already: a missing
  path is refused (a new ledger needs no migration; the first writing task creates it).
- ``open_existing`` opens a ledger for reading (``check``, the source of ``copy``): nothing is
  written, an SQLite file needs no write access, and a location holding no ledger is refused.
- ``copy`` moves every table, ids included, into an empty destination in one destination
  transaction, then compares row counts and per-table checksums of source and destination;
  a mismatch rolls nothing back silently: it raises, and the destination is left empty.
- ``check`` reports each problem with its reason: a node's transitions not numbered 1..N,
  a chain whose from-state is not the previous to-state, a current state or sequence that
  differs from the last transition, gang members or holds naming no node or gang, and
  attestation enrollments whose replacement chain is broken (a node with no current
  enrollment, a replaced row naming no successor of that node).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import ledger_location, ledger_sqlite
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import SCHEMA_VERSION, Ledger
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger_schema import (
    IDENTITY_TABLES, TABLES)

__all__ = ["migrate", "copy", "check", "table_summary", "open_existing"]


def open_existing(location, password=None):
    """The ledger at ``location`` opened read-only; a location holding no ledger is refused."""
    book = Ledger(location, read_only=True, password=password)
    if book.found_version == 0:  # a PostgreSQL database (schema) without the ledger's tables
        book.close()
        raise LedgerError(ledger_location.one_line("No gpufleet ledger at %s: no table 'nodes'; fix: %s"
                                                   % (book.path, ledger_sqlite.FIX_PATH)), ledger=book.path)
    return book


def _refuse_missing_file(location):
    """An SQLite path to migrate must hold a ledger; anything else is refused before writing."""
    path = ledger_location.expand(location)
    if not os.path.exists(path):
        raise LedgerError(ledger_location.one_line(
            "No lifecycle ledger at %s: nothing to migrate (a new ledger needs none: the first task "
            "that writes to it creates it at schema version %d); fix: %s"
            % (path, SCHEMA_VERSION, ledger_sqlite.FIX_PATH)), ledger=path)
    ledger_sqlite.identify(path)


def migrate(location, password=None):
    """Bring the ledger at ``location`` to the current schema; returns {before, after, ledger}."""
    if not ledger_location.is_postgres(location):
        _refuse_missing_file(location)
    book = Ledger(location, password=password)  # opening for writing runs the migrations
    try:
        with book.transaction(write=False) as cur:
            after = book.schema_version(cur)
        return {"ledger": book.path, "before": book.found_version, "after": after,
                "changed": book.found_version != after}
    finally:
        book.close()


def _canonical(value):
    # Floats print with repr so 8-byte doubles compare exactly across the two backends.
    return repr(value) if isinstance(value, float) else value


def _rows(cur, table, columns, key):
    return cur.execute("SELECT %s FROM %s ORDER BY %s"
                       % (", ".join(columns), table, ", ".join(key))).fetchall()


def table_summary(book, cur=None):
    """{table: {"rows": count, "sha256": checksum of its rows in key order}}."""
    def summarise(source):
        out = {}
        for table, columns, key in TABLES:
            digest = hashlib.sha256()
            rows = _rows(source, table, columns, key)
            for row in rows:
                digest.update(json.dumps([_canonical(v) for v in row]).encode("utf-8"))
                digest.update(b"\n")
            out[table] = {"rows": len(rows), "sha256": digest.hexdigest()}
        return out
    if cur is not None:
        return summarise(cur)
    with book.transaction(write=False) as own:
        return summarise(own)


def copy(src, dst, force=False, src_password=None, dst_password=None):
    """Copy every record from ledger ``src`` to ledger ``dst`` (paths or URLs); returns the summary.

    ``dst`` must hold no records unless ``force`` (then its records are replaced). ``src``
    must hold a ledger: a missing path is refused, never taken for an empty ledger.
    """
    source = open_existing(src, password=src_password)  # never writes the source
    try:
        target = Ledger(dst, password=dst_password)
    except BaseException:
        source.close()
        raise
    try:
        with source.transaction(write=False) as scur:
            expected = table_summary(source, scur)
            with target.transaction() as tcur:
                _refuse_non_empty(target, tcur, force)
                for table, columns, key in TABLES:
                    _copy_table(target, tcur, scur, table, columns, key)
                found = table_summary(target, tcur)
                if found != expected:
                    raise LedgerError(
                        "Copy from %s to %s does not match (source %s, destination %s); nothing "
                        "was committed." % (source.path, target.path, expected, found),
                        source=source.path, destination=target.path)
        return {"source": source.path, "destination": target.path, "tables": expected}
    finally:
        source.close()
        target.close()


def _refuse_non_empty(target, cur, force):
    counts = dict((table, cur.execute("SELECT COUNT(*) FROM %s" % table).fetchone()[0])
                  for table, _c, _k in TABLES)
    held = dict((t, n) for t, n in counts.items() if n)
    if held and not force:
        raise LedgerError("The destination ledger %s is not empty (%s). Copy into an empty "
                          "ledger, or pass force to replace its records."
                          % (target.path, ", ".join("%s: %d rows" % i for i in sorted(held.items()))),
                          destination=target.path, rows=held)
    for table in held:
        cur.execute("DELETE FROM %s" % table)


def _copy_table(target, tcur, scur, table, columns, key):
    marks = ",".join("?" for _c in columns)
    insert = "INSERT INTO %s (%s) VALUES (%s)" % (table, ", ".join(columns), marks)
    for row in _rows(scur, table, columns, key):
        tcur.execute(insert, row)
    if table in IDENTITY_TABLES:
        target.backend.after_copy(tcur, table)


def check(book):
    """Consistency problems of an open ledger, each {object, problem}; [] when sound."""
    problems = []
    with book.transaction(write=False) as cur:
        if book.backend.name == "sqlite":  # a damaged page may lie where no query below reads
            damage = [r[0] for r in cur.execute("PRAGMA quick_check(5)").fetchall() if r[0] != "ok"]
            if damage:
                problems.append({"object": "ledger file %s" % book.path, "problem": "is damaged (%s); restore it as "
                                 "docs/reliability.md (Ledger recovery) describes" % "; ".join(damage)})
        nodes = dict((r[0], r[1:]) for r in cur.execute("SELECT node, state, seq, gang_id FROM nodes"))
        chains = {}
        for node, seq, before, after in cur.execute(
                "SELECT node, seq, from_state, to_state FROM transitions ORDER BY node, seq"):
            chains.setdefault(node, []).append((seq, before, after))
        gangs = set(r[0] for r in cur.execute("SELECT gang_id FROM gangs"))
        members = cur.execute("SELECT gang_id, node FROM gang_members").fetchall()
        enrolled = cur.execute("SELECT id, node, replaced_at, replaced_by FROM enrollments ORDER BY id").fetchall()
    for node, chain in sorted(chains.items()):
        problems += _check_chain(node, chain, nodes.get(node))
    for node in sorted(set(nodes) - set(chains)):
        problems.append({"object": "node %s" % node,
                         "problem": "has a current state (%s) but no transition recorded" % nodes[node][0]})
    for gang_id, node in sorted(members):
        if node not in nodes:
            problems.append({"object": "gang %s" % gang_id,
                             "problem": "member %s is not a node in the ledger" % node})
        if gang_id not in gangs:
            problems.append({"object": "gang %s" % gang_id,
                             "problem": "member rows exist but the gang does not"})
    for node, (_state, _seq, gang_id) in sorted(nodes.items()):
        if gang_id is not None and gang_id not in gangs:
            problems.append({"object": "node %s" % node,
                             "problem": "held by gang %s, which is not in the ledger" % gang_id})
    return problems + _check_enrollments(enrolled)


def _check_enrollments(rows):
    problems, by_id, current = [], dict((r[0], r) for r in rows), set()
    for row_id, node, replaced_at, replaced_by in rows:
        where = "enrollment %s of node %s" % (row_id, node)
        if replaced_at is None:
            current.add(node)
            if replaced_by is not None:
                problems.append({"object": where, "problem": "is current but names a successor (%s)" % replaced_by})
            continue
        successor = by_id.get(replaced_by)
        if successor is None or successor[1] != node or successor[0] <= row_id:
            problems.append({"object": where, "problem": "was replaced, but its successor %s is not a later "
                             "enrollment of the same node; re-enroll the node to give it a current one"
                             % replaced_by})
    for node in sorted(set(r[1] for r in rows) - current):
        problems.append({"object": "node %s" % node, "problem": "has enrollments but no current one; its quotes "
                         "are refused until it is re-enrolled"})
    return problems


def _check_chain(node, chain, current):
    where = "node %s" % node
    seqs = [seq for seq, _b, _a in chain]
    if seqs != list(range(1, len(chain) + 1)):
        return [{"object": where, "problem": "transition sequence is %s, expected 1..%d with no gap"
                 % (seqs, len(chain))}]
    problems = []
    for (seq, before, _after), (_p, _b, previous) in zip(chain[1:], chain[:-1]):
        if before != previous:
            problems.append({"object": where, "problem": "transition %d starts from %s but the "
                             "previous one ended in %s" % (seq, before, previous)})
    last_seq, _b, last_state = chain[-1]
    if current is None:
        problems.append({"object": where, "problem": "has transitions but no current record"})
    elif (current[0], current[1]) != (last_state, last_seq):
        problems.append({"object": where, "problem": "current state %s (seq %s) differs from its last "
                         "transition %s (seq %d)" % (current[0], current[1], last_state, last_seq)})
    return problems
