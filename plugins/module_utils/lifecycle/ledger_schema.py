# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The ledger's schema, one definition for SQLite and PostgreSQL, and its migrations.

A fresh ledger is built by running every migration from version 1, so the path an
existing ledger takes (1 -> 2 -> ...) is the path every new ledger takes too, and the
tests of a fresh ledger exercise it. Column types are written once with a few dialect
words (``{id}``, ``{real}``, ``{bigint}``) that each backend fills in.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

__all__ = ["SCHEMA_VERSION", "TABLES", "migrations", "render"]

SCHEMA_VERSION = 4

# Every table with its columns (copy and checksums read them in this order) and the
# columns that order its rows stably (its key).
TABLES = (
    ("nodes", ("node", "state", "seq", "sku", "image_version", "gate_report_id", "reason",
               "gang_id", "updated_at"), ("node",)),
    ("transitions", ("id", "node", "seq", "from_state", "to_state", "at", "who", "why",
                     "image_version", "gate_report_id", "run_id", "gang_id"), ("id",)),
    ("gangs", ("gang_id", "sku", "size", "deadline", "status", "reason", "created_at",
               "updated_at"), ("gang_id",)),
    ("gang_members", ("gang_id", "node", "source", "status", "replaced_by", "reason", "at"),
     ("gang_id", "node")),
    ("decisions", ("id", "at", "controller", "pool", "action", "nodes", "job", "reason",
                   "demand", "supply", "outcome", "outcome_at"), ("id",)),
    ("demand_history", ("pool", "minute", "gpus_running", "gpus_pending",
                        "gpus_pending_capacity", "recorded_at"), ("pool", "minute")),
    ("node_samples", ("id", "at", "node", "slurm_state", "reason"), ("id",)),
    ("leases", ("name", "holder", "acquired_at", "renewed_at", "expires_at"), ("name",)),
    ("day2_tracks", ("node", "source", "kind", "reason", "first_seen", "seen", "run_start",
                     "updated_at"), ("node", "source", "kind")),
    ("rollouts", ("id", "pool", "from_version", "to_version", "from_gate_profile", "gate_profile",
                  "phase", "canaries", "reason", "who", "created_at", "updated_at"), ("id",)),
    ("enrollments", ("id", "node", "ek_fingerprint", "ak_pem", "ak_name", "enrolled_at", "enrolled_by",
                     "reason", "replaced_at", "replaced_by"), ("id",)),
)
# Tables whose integer id a backend generates (PostgreSQL must move its sequence after a copy).
IDENTITY_TABLES = ("transitions", "decisions", "node_samples", "rollouts", "enrollments")

_V1 = (
    """CREATE TABLE IF NOT EXISTS nodes (
        node TEXT PRIMARY KEY, state TEXT NOT NULL, seq INTEGER NOT NULL,
        sku TEXT, image_version TEXT, gate_report_id TEXT, reason TEXT,
        gang_id TEXT, updated_at {real} NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS transitions (
        id {id}, node TEXT NOT NULL, seq INTEGER NOT NULL,
        from_state TEXT, to_state TEXT NOT NULL, at {real} NOT NULL, who TEXT NOT NULL,
        why TEXT NOT NULL, image_version TEXT, gate_report_id TEXT, run_id TEXT,
        gang_id TEXT, UNIQUE (node, seq))""",
    """CREATE TABLE IF NOT EXISTS gangs (
        gang_id TEXT PRIMARY KEY, sku TEXT NOT NULL, size INTEGER NOT NULL,
        deadline {real} NOT NULL, status TEXT NOT NULL, reason TEXT,
        created_at {real} NOT NULL, updated_at {real} NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS gang_members (
        gang_id TEXT NOT NULL, node TEXT NOT NULL, source TEXT NOT NULL,
        PRIMARY KEY (gang_id, node))""",
    "CREATE INDEX IF NOT EXISTS transitions_node ON transitions (node, seq)",
)

# Version 2: warmth tiers need no DDL (states are text); the capacity controller's
# decision log, demand history, Slurm samples and lease; gang substitution records.
_V2 = (
    "CREATE TABLE IF NOT EXISTS ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "ALTER TABLE gang_members ADD COLUMN status TEXT NOT NULL DEFAULT 'member'",
    "ALTER TABLE gang_members ADD COLUMN replaced_by TEXT",
    "ALTER TABLE gang_members ADD COLUMN reason TEXT",
    "ALTER TABLE gang_members ADD COLUMN at {real}",
    """CREATE TABLE IF NOT EXISTS decisions (
        id {id}, at {real} NOT NULL, controller TEXT NOT NULL, pool TEXT,
        action TEXT NOT NULL, nodes TEXT NOT NULL, job TEXT, reason TEXT NOT NULL,
        demand TEXT, supply TEXT, outcome TEXT, outcome_at {real})""",
    "CREATE INDEX IF NOT EXISTS decisions_at ON decisions (at)",
    """CREATE TABLE IF NOT EXISTS demand_history (
        pool TEXT NOT NULL, minute {bigint} NOT NULL, gpus_running INTEGER NOT NULL,
        gpus_pending INTEGER NOT NULL, gpus_pending_capacity INTEGER NOT NULL,
        recorded_at {real} NOT NULL, PRIMARY KEY (pool, minute))""",
    """CREATE TABLE IF NOT EXISTS node_samples (
        id {id}, at {real} NOT NULL, node TEXT NOT NULL, slurm_state TEXT NOT NULL,
        reason TEXT)""",
    "CREATE INDEX IF NOT EXISTS node_samples_node ON node_samples (node, at)",
    """CREATE TABLE IF NOT EXISTS leases (
        name TEXT PRIMARY KEY, holder TEXT NOT NULL, acquired_at {real} NOT NULL,
        renewed_at {real} NOT NULL, expires_at {real} NOT NULL)""",
)

# Version 3: the day-2 persistence tracks (gpufleet.day2.persistence), so a restarted
# controller keeps counting where the last one stopped, and image / gate-profile rollouts of
# a pool (gpufleet refresh; the rollout's header and phase live here, what happened to each
# node is in the decision log). docs/day2.md.
_V3 = (
    """CREATE TABLE IF NOT EXISTS day2_tracks (
        node TEXT NOT NULL, source TEXT NOT NULL, kind TEXT NOT NULL, reason TEXT NOT NULL,
        first_seen {real} NOT NULL, seen TEXT NOT NULL, run_start {real},
        updated_at {real} NOT NULL, PRIMARY KEY (node, source, kind))""",
    """CREATE TABLE IF NOT EXISTS rollouts (
        id {id}, pool TEXT NOT NULL, from_version TEXT NOT NULL, to_version TEXT NOT NULL,
        from_gate_profile TEXT, gate_profile TEXT, phase TEXT NOT NULL, canaries TEXT NOT NULL,
        reason TEXT, who TEXT NOT NULL, created_at {real} NOT NULL, updated_at {real} NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS rollouts_pool ON rollouts (pool, id)",
)

# Version 4: TPM attestation enrollments (gpufleet.attest, docs/attestation.md): each node's AK
# bound to its EK certificate's fingerprint. A re-enrollment closes the current row (replaced_at,
# replaced_by) and adds a new one, so nothing is lost; the partial unique index allows one
# current enrollment per node.
_V4 = (
    """CREATE TABLE IF NOT EXISTS enrollments (
        id {id}, node TEXT NOT NULL, ek_fingerprint TEXT NOT NULL, ak_pem TEXT NOT NULL,
        ak_name TEXT NOT NULL, enrolled_at {real} NOT NULL, enrolled_by TEXT NOT NULL,
        reason TEXT NOT NULL, replaced_at {real}, replaced_by {bigint})""",
    "CREATE INDEX IF NOT EXISTS enrollments_node ON enrollments (node, id)",
    "CREATE UNIQUE INDEX IF NOT EXISTS enrollments_current ON enrollments (node) WHERE replaced_at IS NULL",
)

_MIGRATIONS = ((1, _V1), (2, _V2), (3, _V3), (4, _V4))


def render(statement, dialect):
    """``statement`` with the backend's words for the dialect placeholders."""
    return statement.format(**dialect)


def migrations(current, dialect):
    """(version, [statements]) still to run on a ledger at schema ``current``, in order."""
    return [(version, [render(s, dialect) for s in statements])
            for version, statements in _MIGRATIONS if version > current]
