"""``gpufleet controller status`` and ``--dry-run``: plain-text views of pools, plan and history."""
from collections import Counter

from gpufleet.capacity import model
from gpufleet.controller import records

__all__ = ["render_plan", "render_status", "rollout_lines", "status_document"]


def _when(at):
    """Epoch seconds (decisions, rollouts) or the ledger's own ISO text (node rows)."""
    text = at if isinstance(at, str) else records.iso(at)
    return (text or "-")[:19].replace("T", " ")


def render_plan(plan):
    lines = ["plan: %d action(s)" % len(plan.actions)]
    for a in plan.actions:
        extra = "".join(" %s=%s" % (k, v) for k, v in (("job", a.job_id), ("gang", a.gang_id),
                                                        ("replaces", a.replaces), ("to", a.target_tier)) if v)
        lines.append("  %-10s %-10s %-28s%s  (%s)" % (a.kind, a.pool, ",".join(a.nodes), extra, a.reason))
    for pool, notes in sorted((plan.notes or {}).items()):
        lines.append("  notes %s: %s" % (pool, notes))
    return "\n".join(lines)


def _pool_counts(nodes, jobs):
    """[(pool, tier Counter, pending jobs)] by pool name: what both views show per pool."""
    return [(pool, Counter(n.tier for n in nodes if n.pool == pool),
             [j for j in jobs if j.pool == pool and j.state == "PENDING"]) for pool in sorted({n.pool for n in nodes})]


def _pools(nodes, jobs):
    lines = ["%-12s %s" % ("pool", "  ".join("%s" % t for t in model.TIERS)) + "  pending(jobs/nodes)"]
    for pool, tiers, pending in _pool_counts(nodes, jobs):
        lines.append("%-12s %s  %d/%d" % (pool, "  ".join("%*d" % (len(t), tiers.get(t, 0)) for t in model.TIERS),
                                          len(pending), sum(j.nodes for j in pending)))
    return lines


def _day2(world, operator):
    """Drains a person set (never touched by the controller) and the open day-2 cases."""
    lines = ["operator drains (left alone): %s" % (
        "; ".join("%s %s: %s" % (o.node, o.state, o.reason) for o in operator) or "none")]
    lines.append("day-2 cases: %s" % ("none" if not world.cases else ""))
    for node, open_case in sorted(world.cases.items()):
        case = open_case.case
        last = open_case.reasons[-1][1] if open_case.reasons else "-"
        lines.append("  %-20s %-15s since %s%s  %s" % (node, case.phase, _when(case.since),
                                                      " (in flight)" if open_case.in_flight else "", last))
    return lines


def _rollout_state(row, book):
    """(gate results {node: passed}, nodes on the new version, its items still out) of a rollout."""
    items = sorted((i for i in book.items.values() if i.rollout_id == row["id"]), key=lambda i: i.node)
    return book.results.get(row["id"], {}), book.moved.get(row["id"], frozenset()), items


def rollout_lines(rows, book):
    """Each rollout: phase, versions, canaries, gate results and the nodes still out."""
    lines = []
    for row in rows:
        results, moved, out = _rollout_state(row, book)
        items = sorted(i.node + " " + i.phase + (" (in flight)" if i.in_flight else "") for i in out)
        profile = " gate profile %s" % row["gate_profile"] if row["gate_profile"] else ""
        lines.append("  rollout %s pool %s: %s -> %s%s, phase %s since %s (%s)" % (
            row["id"], row["pool"], row["from_version"], row["to_version"], profile, row["phase"],
            _when(row["updated_at"]), row["reason"] or "-"))
        lines.append("    canaries: %s; passed: %s; failed: %s; on the new version: %d; out now: %s" % (
            ", ".join(row["canaries"]) or "none yet",
            ", ".join(sorted(n for n, ok in results.items() if ok)) or "none",
            ", ".join(sorted(n for n, ok in results.items() if not ok)) or "none",
            len(moved), "; ".join(items) or "none"))
    return lines


def _replacement_decisions(recent):
    return [d for d in recent if d["action"] == "resume" and ((d.get("demand") or {}).get("action") or {}).get("day2")]


def _replacements(recent):
    """Day-2 "replace, then repair" among the decisions shown: which hot node went to which job
    in place of which failed node, and whether it is schedulable yet (or why none was)."""
    found = _replacement_decisions(recent)
    lines = ["replacements (failed member of a running job -> hot node): %s" % ("none" if not found else "")]
    for d in found:
        extra = d["demand"]["action"]
        failed = extra.get("replaces") or "-"
        # where the job restarts once requeued: its reservation and the nodes in it
        where = (" in %s (%s)" % (extra["reservation"], ",".join(extra.get("reserve_nodes") or ()))
                 if extra.get("reservation") else "")
        lines.append("  %s job %-8s %-20s -> %-20s %s%s" % (_when(d["at"]), d.get("job") or "-", failed,
                                                           ",".join(d["nodes"] or []) or "(none)",
                                                           d["outcome"] or "in flight", where))
    return lines


def _break_fix_nodes(nodes):
    return sorted((n for n in nodes if n.get("state") == records.states.BREAK_FIX), key=lambda n: n["node"])


def _break_fix(nodes):
    """Nodes handed to a technician: the ledger's reason names the record file (docs/day2.md)."""
    found = _break_fix_nodes(nodes)
    lines = ["break_fix (a technician's): %s" % ("none" if not found else "")]
    for node in found:
        lines.append("  %-20s since %s  %s" % (node["node"], _when(node.get("updated_at")), node.get("reason") or "-"))
    return lines


def render_status(world, in_flight, recent, holder, ledger_nodes=(), learned=None, day2=None):
    """``learned``: {pool: what its learned forecast model is (gpufleet.controller.learning)};
    ``day2``: the repair stage's pass (its operator drains)."""
    lines = ["lease: %s" % ("held by %s until %s" % (holder[0], _when(holder[1])) if holder[0] else "free")]
    lines += _pools(world.nodes, world.jobs)
    lines += ["learned forecast: %s" % text for _pool, text in sorted((learned or {}).items())]
    lines.append("unservable jobs (no pool can ever serve them): %s" % (
        "; ".join("%s: %s" % (j.job_id, why) for j, why in world.unservable) or "none"))
    lines += _day2(world, day2.operator if day2 else ())
    lines.append("rollouts in progress: %s" % ("none" if not world.rollouts else ""))
    lines += rollout_lines(world.rollouts, world.rollout_book)
    lines += _replacements(recent)
    lines += _break_fix(ledger_nodes)
    lines.append("in flight: %s" % (", ".join("%s %s %s" % (d["id"], d["action"], ",".join(d["nodes"] or []))
                                              for d in in_flight) or "nothing"))
    lines.append("last decisions:")
    for d in recent:
        lines.append("  %s %-4s %-10s %-9s %-24s %-30s %s" % (
            _when(d["at"]), d["id"], d["pool"] or "-", d["action"], ",".join(d["nodes"] or [])[:24],
            (d["outcome"] or "in flight")[:30], d["reason"]))
    return "\n".join(lines)


def _decision(d):
    return {"id": d["id"], "at": d["at"], "pool": d.get("pool"), "action": d["action"], "nodes": list(d["nodes"] or []),
            "job": d.get("job"), "outcome": d.get("outcome"), "reason": d.get("reason")}


def status_document(world, in_flight, recent, holder, ledger_nodes=(), learned=None, day2=None):
    """What ``render_status`` shows, as one JSON-ready dict (``controller status --json``): the
    same facts from the same selectors, times as epoch seconds or the ledger's own text,
    ``outcome`` None while in flight."""
    rollouts = []
    for row in world.rollouts:
        results, moved, out = _rollout_state(row, world.rollout_book)
        rollouts.append(dict(
            {k: row.get(k) for k in ("id", "pool", "from_version", "to_version", "gate_profile", "phase",
                                     "updated_at", "reason")},
            canaries=list(row.get("canaries") or []), passed=sorted(n for n, ok in results.items() if ok),
            failed=sorted(n for n, ok in results.items() if not ok), on_new_version=len(moved),
            out_now=[{"node": i.node, "phase": i.phase, "in_flight": bool(i.in_flight)} for i in out]))
    replacements = []
    for d in _replacement_decisions(recent):
        extra = d["demand"]["action"]
        replacements.append(dict(_decision(d), replaces=extra.get("replaces"),
                                 reservation=extra.get("reservation") or None,
                                 reserve_nodes=list(extra.get("reserve_nodes") or [])))
    return {
        "lease": {"holder": holder[0], "until": holder[1] if holder[0] else None},
        "pools": {pool: {"tiers": {t: tiers.get(t, 0) for t in model.TIERS}, "pending_jobs": len(pending),
                         "pending_nodes": sum(j.nodes for j in pending)}
                  for pool, tiers, pending in _pool_counts(world.nodes, world.jobs)},
        "unservable": [{"job": j.job_id, "reason": why} for j, why in world.unservable],
        "learned_forecast": dict(learned or {}),
        "operator_drains": [{"node": o.node, "state": o.state, "reason": o.reason}
                            for o in (day2.operator if day2 else ())],
        "day2_cases": [{"node": node, "phase": c.case.phase, "since": c.case.since, "in_flight": bool(c.in_flight),
                        "last_reason": c.reasons[-1][1] if c.reasons else None}
                       for node, c in sorted(world.cases.items())],
        "rollouts": rollouts,
        "replacements": replacements,
        "break_fix": [{"node": n["node"], "since": n.get("updated_at"), "reason": n.get("reason")}
                      for n in _break_fix_nodes(ledger_nodes)],
        "in_flight": [{"id": d["id"], "action": d["action"], "nodes": list(d["nodes"] or [])} for d in in_flight],
        "last_decisions": [_decision(d) for d in recent],
    }
