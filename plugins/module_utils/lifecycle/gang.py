# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Gang provisioning: N nodes of a SKU by a deadline, all admitted or none.

``plan`` reserves the fastest free nodes first (hot, ready, parked, then provisionable);
``substitute`` swaps a member that failed or missed its own deadline for a spare of the
same SKU in one transaction, keeping the record of who replaced whom and why;
``admitting`` checks, under the ledger's write lock, that every member is ``ready`` or
``hot`` before the scheduler is touched; ``admitted`` records every member ``joined``
in one transaction; ``rollback`` sends members that failed (or were cut off in flight)
to ``failed`` with the reason and releases every healthy one back to the pool. Every
step is idempotent: repeating it after a crash returns the recorded outcome.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import ledger_gangs, states
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import GangError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import iso

__all__ = ["plan", "substitute", "admitting", "admitted", "rollback", "status",
           "PLANNED", "ADMITTING", "ADMITTED", "ROLLED_BACK"]

PLANNED = "planned"
ADMITTING = "admitting"
ADMITTED = "admitted"
ROLLED_BACK = "rolled_back"


def _require(cur, gang_id):
    gang = ledger_gangs.load(cur, gang_id)
    if gang is None:
        raise GangError('Gang "%s" is not in the ledger. Plan it first (gang state=planned).'
                        % gang_id, gang_id=gang_id)
    return gang


def _describe(ledger, cur, gang):
    """The gang as returned to callers: times as ISO text, members with their state."""
    now = ledger.clock()
    out = dict(gang)
    out["expired"] = gang["status"] in (PLANNED, ADMITTING) and now > gang["deadline"]
    out["seconds_left"] = round(gang["deadline"] - now, 3)
    for key in ("deadline", "created_at", "updated_at"):
        out[key] = iso(gang[key])
    members = []
    for member in gang["members"]:
        record = ledger.get(member["node"], cur) or {}
        members.append(dict(member, state=record.get("state"), reason=record.get("reason")))
    out["members"] = members
    out["substitutions"] = [dict(s, at=iso(s["at"])) for s in gang["substitutions"]]
    for source in ("pool", "wake", "provision"):
        out[source] = [m["node"] for m in members if m["source"] == source]
    return out


def _free(ledger, cur, sku, candidates, exclude=()):
    allowed = set(candidates) if candidates is not None else None
    return [n for n in ledger.nodes(sku=sku, cur=cur)
            if n["gang_id"] is None and n["node"] not in exclude
            and (allowed is None or n["node"] in allowed)]


def _by_speed(free):
    """(node, source) fastest first: hot, then ready (pool), parked (wake), then provision."""
    order = [(states.HOT, "pool"), (states.READY, "pool"), (states.PARKED, "wake")]
    chosen = []
    for state, source in order:
        chosen += [(n["node"], source) for n in free if n["state"] == state]
    chosen += [(n["node"], "provision") for n in free if n["state"] in states.PROVISIONABLE]
    return chosen


def _select(ledger, cur, sku, size, candidates):
    """Fastest tier first; names sorted within a tier for a stable choice."""
    ranked = _by_speed(_free(ledger, cur, sku, candidates))
    chosen = ranked[:size]
    if len(chosen) < size:
        counts = {}
        for n in ledger.nodes(sku=sku, cur=cur):
            key = n["state"] if n["gang_id"] is None else "held by gang %s" % n["gang_id"]
            counts[key] = counts.get(key, 0) + 1
        pool = len([c for c in ranked if c[1] == "pool"])
        raise GangError(
            "Cannot plan a gang of %d %s nodes: only %d are free (%d ready in the warm pool, "
            "%d parked, %d provisionable). Ledger nodes of this SKU by state: %s. Enroll or "
            "recycle more nodes, or ask for fewer." % (
                size, sku, len(chosen), pool, len([c for c in ranked if c[1] == "wake"]),
                len([c for c in ranked if c[1] == "provision"]), counts or "none"),
            sku=sku, size=size, free=len(chosen))
    return chosen


def plan(ledger, gang_id, sku, size, deadline_seconds, candidates=None):
    """Reserve ``size`` nodes of ``sku`` for the gang; returns (gang, changed)."""
    if size < 1 or deadline_seconds <= 0:
        raise GangError("Gang %s needs size >= 1 and a positive deadline (got size=%s, "
                        "deadline_seconds=%s)." % (gang_id, size, deadline_seconds), gang_id=gang_id)
    with ledger.transaction() as cur:
        existing = ledger_gangs.load(cur, gang_id)
        if existing is not None:
            if (existing["sku"], existing["size"]) != (sku, size):
                raise GangError(
                    'Gang "%s" already exists for %d %s nodes; it cannot be re-planned as %d %s. '
                    "Use a new gang id." % (gang_id, existing["size"], existing["sku"], size, sku),
                    gang_id=gang_id)
            return _describe(ledger, cur, existing), False
        now = ledger.clock()
        chosen = _select(ledger, cur, sku, size, candidates)
        ledger_gangs.create(cur, gang_id, sku, size, now + deadline_seconds, PLANNED, now)
        for name, source in chosen:
            ledger_gangs.add_member(cur, gang_id, name, source, now)
            ledger.reserve(cur, name, gang_id)
        return _describe(ledger, cur, _require(cur, gang_id)), True


def _spare(ledger, cur, gang, spare, candidates):
    """(node, source) of the spare: the named one if free and fit, else the fastest free one."""
    exclude = set(m["node"] for m in gang["members"]) | set(s["node"] for s in gang["substitutions"])
    ranked = _by_speed(_free(ledger, cur, gang["sku"], candidates, exclude))
    if spare is None and ranked:
        return ranked[0]
    for name, source in ranked:
        if name == spare:
            return name, source
    record = ledger.get(spare, cur) if spare else None
    raise GangError(
        'Gang "%s" has no usable spare%s: a spare must be a free %s node that is hot, ready, '
        "parked or provisionable and was never in this gang (%s). Roll the gang back or add "
        "capacity." % (gang["gang_id"], ' "%s"' % spare if spare else "", gang["sku"],
                       "it is %s" % (record and record["state"] if record else "unknown")
                       if spare else "none is free"),
        gang_id=gang["gang_id"], spare=spare)


def _retire(ledger, cur, gang_id, node, reason, who, run_id):
    """Take a member out: a node caught in flight is failed (its condition is unknown)."""
    record = ledger.get(node, cur) or {}
    if record.get("state") in states.IN_PROGRESS:
        ledger.apply(cur, node, states.FAILED, who, reason, run_id=run_id, gang_id=gang_id)
    ledger.reserve(cur, node, None)
    after = (ledger.get(node, cur) or {}).get("state")
    return ledger_gangs.FAILED if after == states.FAILED else ledger_gangs.REPLACED


def substitute(ledger, gang_id, node, reason, who, spare=None, candidates=None, run_id=None):
    """Replace member ``node`` with a spare inside one transaction; returns (gang, changed).

    Only while the gang is planned and its deadline holds (otherwise roll back). The
    replaced member keeps its row (status ``failed`` or ``replaced``, ``replaced_by``,
    ``reason``); repeating the call returns the recorded substitution unchanged.
    """
    if not reason:
        raise GangError("Substituting member %s of gang %s needs a reason." % (node, gang_id),
                        gang_id=gang_id, node=node)
    with ledger.transaction() as cur:
        gang = _require(cur, gang_id)
        done = [s for s in gang["substitutions"] if s["node"] == node and s["replaced_by"]]
        if done:
            return _describe(ledger, cur, gang), False
        if node not in [m["node"] for m in gang["members"]]:
            raise GangError('Node "%s" is not a member of gang "%s" (members: %s).'
                            % (node, gang_id, ", ".join(m["node"] for m in gang["members"])),
                            gang_id=gang_id, node=node)
        if gang["status"] != PLANNED or ledger.clock() > gang["deadline"]:
            raise GangError('Gang "%s" is %s%s; members can be replaced only while it is planned '
                            "and before its deadline. Roll it back instead."
                            % (gang_id, gang["status"], ", past its deadline"
                               if ledger.clock() > gang["deadline"] else ""), gang_id=gang_id)
        name, source = _spare(ledger, cur, gang, spare, candidates)
        now = ledger.clock()
        status = _retire(ledger, cur, gang_id, node, reason, who, run_id)
        ledger_gangs.set_member(cur, gang_id, node, status, now, reason=reason, replaced_by=name)
        ledger_gangs.add_member(cur, gang_id, name, source, now)
        ledger.reserve(cur, name, gang_id)
        return _describe(ledger, cur, _require(cur, gang_id)), True


def admitting(ledger, gang_id):
    """Lock the gang for admission once every member is ready; returns (gang, changed)."""
    with ledger.transaction() as cur:
        gang = _require(cur, gang_id)
        if gang["status"] in (ADMITTING, ADMITTED):
            return _describe(ledger, cur, gang), False
        if gang["status"] != PLANNED:
            raise GangError('Gang "%s" is %s and cannot be admitted. Plan a new gang.'
                            % (gang_id, gang["status"]), gang_id=gang_id, status=gang["status"])
        if ledger.clock() > gang["deadline"]:
            raise GangError('Gang "%s" missed its deadline (%s) before all members were ready. '
                            "Roll it back (gang state=rolled_back)." % (gang_id, iso(gang["deadline"])),
                            gang_id=gang_id)
        not_ready = {}
        for member in gang["members"]:
            record = ledger.get(member["node"], cur) or {}
            if record.get("state") not in states.ADMISSIBLE:
                not_ready[member["node"]] = record.get("state")
        if not_ready:
            raise GangError(
                'Gang "%s" cannot be admitted: %d of %d members are not ready (%s). Nothing was '
                "admitted; roll the gang back." % (
                    gang_id, len(not_ready), gang["size"],
                    ", ".join("%s=%s" % item for item in sorted(not_ready.items()))),
                gang_id=gang_id, not_ready=not_ready)
        ledger_gangs.set_status(cur, gang_id, ADMITTING, ledger.clock())
        return _describe(ledger, cur, _require(cur, gang_id)), True


def admitted(ledger, gang_id, who, run_id=None):
    """Record every member ``joined`` in one transaction; returns (gang, changed)."""
    with ledger.transaction() as cur:
        gang = _require(cur, gang_id)
        if gang["status"] == ADMITTED:
            return _describe(ledger, cur, gang), False
        if gang["status"] != ADMITTING:
            raise GangError('Gang "%s" is %s; run gang state=admitting before state=admitted so '
                            "readiness is checked first." % (gang_id, gang["status"]), gang_id=gang_id)
        why = "admitted with gang %s (%d nodes)" % (gang_id, gang["size"])
        for member in gang["members"]:
            ledger.apply(cur, member["node"], states.ADMITTED_STATE, who, why,
                         run_id=run_id, gang_id=gang_id)
        ledger_gangs.set_status(cur, gang_id, ADMITTED, ledger.clock())
        return _describe(ledger, cur, _require(cur, gang_id)), True


def _roll_back_member(ledger, cur, gang_id, node, reason, who, run_id):
    record = ledger.get(node, cur) or {}
    state = record.get("state")
    if reason and state in states.IN_PROGRESS:
        ledger.apply(cur, node, states.FAILED, who, reason, run_id=run_id, gang_id=gang_id)
    elif state in states.IN_PROGRESS:
        why = "gang %s rolled back while the node was %s; reimage before reuse" % (gang_id, state)
        ledger.apply(cur, node, states.FAILED, who, why, run_id=run_id, gang_id=gang_id)
    elif reason and state in states.ADMISSIBLE:
        ledger.apply(cur, node, states.RECYCLING, who, reason, run_id=run_id, gang_id=gang_id)
    ledger.reserve(cur, node, None)
    after = ledger.get(node, cur) or {}
    return {"node": node, "before": state, "after": after.get("state"), "reason": after.get("reason")}


def rollback(ledger, gang_id, reason, who, node_reasons=None, run_id=None):
    """Undo a gang that did not make it; returns (gang, changed).

    ``node_reasons`` maps a failed member to why it failed. In-flight members go to
    ``failed``; ``ready``/``hot`` members return to the warm pool; nothing is admitted.
    Substitution records stay as they were.
    """
    node_reasons = node_reasons or {}
    with ledger.transaction() as cur:
        gang = _require(cur, gang_id)
        if gang["status"] == ROLLED_BACK:
            return _describe(ledger, cur, gang), False
        if gang["status"] == ADMITTED:
            raise GangError('Gang "%s" is already admitted; its nodes are joined. Drain them '
                            "(playbooks/recycle.yml) instead of rolling back." % gang_id, gang_id=gang_id)
        outcome = [_roll_back_member(ledger, cur, gang_id, m["node"], node_reasons.get(m["node"]),
                                     who, run_id) for m in gang["members"]]
        ledger_gangs.set_status(cur, gang_id, ROLLED_BACK, ledger.clock(), reason)
        described = _describe(ledger, cur, _require(cur, gang_id))
        described["rollback"] = outcome
        return described, True


def status(ledger, gang_id):
    """The gang's record and its members' current states (read-only)."""
    with ledger.transaction(write=False) as cur:
        return _describe(ledger, cur, _require(cur, gang_id))
