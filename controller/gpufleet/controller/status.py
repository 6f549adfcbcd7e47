"""``gpufleet controller status`` and ``--dry-run``: plain-text views of pools, plan and history."""
from collections import Counter

from gpufleet.capacity import model
from gpufleet.controller import records

__all__ = ["render_plan", "render_status", "rollout_lines"]


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


def _pools(nodes, jobs):
    lines = ["%-12s %s" % ("pool", "  ".join("%s" % t for t in model.TIERS)) + "  pending(jobs/nodes)"]
    for pool in sorted({n.pool for n in nodes}):
        tiers = Counter(n.tier for n in nodes if n.pool == pool)
        pending = [j for j in jobs if j.pool == pool and j.state == "PENDING"]
        lines.append("%-12s %s  %d/%d" % (pool, "  ".join("%*d" % (len(t), tiers.get(t, 0)) for t in model.TIERS),
                                          len(pending), sum(j.nodes for j in pending)))
    return lines


def _day2(world):
    """Drains a person set (never touched by the controller) and the open day-2 cases."""
    operator = getattr(getattr(world, "day2", None), "operator", ())
    lines = ["operator drains (left alone): %s" % (
        "; ".join("%s %s: %s" % (o.node, o.state, o.reason) for o in operator) or "none")]
    cases = getattr(world, "cases", None) or {}
    lines.append("day-2 cases: %s" % ("none" if not cases else ""))
    for node, open_case in sorted(cases.items()):
        case = open_case.case
        last = open_case.reasons[-1][1] if open_case.reasons else "-"
        lines.append("  %-20s %-15s since %s%s  %s" % (node, case.phase, _when(case.since),
                                                      " (in flight)" if open_case.in_flight else "", last))
    return lines


def rollout_lines(rows, book):
    """Each rollout: phase, versions, canaries, gate results and the nodes still out."""
    lines = []
    for row in rows:
        results = (book.results if book else {}).get(row["id"], {})
        moved = (book.moved if book else {}).get(row["id"], frozenset())
        items = sorted(i.node + " " + i.phase + (" (in flight)" if i.in_flight else "")
                       for i in (book.items.values() if book else ()) if i.rollout_id == row["id"])
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


def _replacements(recent):
    """Day-2 "replace, then repair" among the decisions shown: which hot node went to which job
    in place of which failed node, and whether it is schedulable yet (or why none was)."""
    found = [d for d in recent if d["action"] == "resume"
             and ((d.get("demand") or {}).get("action") or {}).get("day2")]
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


def _break_fix(nodes):
    """Nodes handed to a technician: the ledger's reason names the record file (docs/day2.md)."""
    found = [n for n in nodes if n.get("state") == records.states.BREAK_FIX]
    lines = ["break_fix (a technician's): %s" % ("none" if not found else "")]
    for node in sorted(found, key=lambda n: n["node"]):
        lines.append("  %-20s since %s  %s" % (node["node"], _when(node.get("updated_at")), node.get("reason") or "-"))
    return lines


def render_status(world, in_flight, recent, holder, ledger_nodes=()):
    lines = ["lease: %s" % ("held by %s until %s" % (holder[0], _when(holder[1])) if holder[0] else "free")]
    lines += _pools(world.nodes, world.jobs)
    lines.append("unservable jobs (no pool can ever serve them): %s" % (
        "; ".join("%s: %s" % (j.job_id, why) for j, why in world.unservable) or "none"))
    lines += _day2(world)
    rows = getattr(world, "rollouts", None) or []
    lines.append("rollouts in progress: %s" % ("none" if not rows else ""))
    lines += rollout_lines(rows, getattr(world, "rollout_book", None))
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
