"""``gpufleet controller status`` and ``--dry-run``: plain-text views of pools, plan and history."""
from collections import Counter

from gpufleet.capacity import model
from gpufleet.controller import records
from gpufleet.work import codec

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


def _rollouts(rows, book):
    """Each rollout's row, gate results {node: passed}, nodes on the new version and items still out."""
    found = []
    for row in rows:
        results = book.results.get(row["id"], {})
        out = sorted((i for i in book.items.values() if i.rollout_id == row["id"]), key=lambda i: i.node)
        found.append(dict(
            {k: row.get(k) for k in ("id", "pool", "from_version", "to_version", "gate_profile", "phase",
                                     "updated_at", "reason")},
            canaries=list(row.get("canaries") or []), passed=sorted(n for n, ok in results.items() if ok),
            failed=sorted(n for n, ok in results.items() if not ok),
            on_new_version=len(book.moved.get(row["id"], frozenset())),
            out_now=[{"node": i.node, "phase": i.phase, "in_flight": bool(i.in_flight)} for i in out]))
    return found


def rollout_lines(rows, book):
    """Each rollout: phase, versions, canaries, gate results and the nodes still out."""
    lines = []
    for r in _rollouts(rows, book):
        items = [i["node"] + " " + i["phase"] + (" (in flight)" if i["in_flight"] else "") for i in r["out_now"]]
        profile = " gate profile %s" % r["gate_profile"] if r["gate_profile"] else ""
        lines.append("  rollout %s pool %s: %s -> %s%s, phase %s since %s (%s)" % (
            r["id"], r["pool"], r["from_version"], r["to_version"], profile, r["phase"],
            _when(r["updated_at"]), r["reason"] or "-"))
        lines.append("    canaries: %s; passed: %s; failed: %s; on the new version: %d; out now: %s" % (
            ", ".join(r["canaries"]) or "none yet", ", ".join(r["passed"]) or "none",
            ", ".join(r["failed"]) or "none", r["on_new_version"], "; ".join(items) or "none"))
    return lines


def render_status(world, in_flight, recent, holder, ledger_nodes=(), learned=None, day2=None):
    """``status_document``'s facts as text. ``learned``: {pool: what its learned forecast model is
    (gpufleet.controller.learning)}; ``day2``: the repair stage's pass (its operator drains)."""
    doc = status_document(world, in_flight, recent, holder, ledger_nodes, learned, day2)
    lease = doc["lease"]
    lines = ["lease: %s" % ("held by %s until %s" % (lease["holder"], _when(lease["until"])) if lease["holder"]
                            else "free")]
    lines.append("%-12s %s" % ("pool", "  ".join("%s" % t for t in model.TIERS)) + "  pending(jobs/nodes)")
    for pool, row in doc["pools"].items():
        lines.append("%-12s %s  %d/%d" % (pool, "  ".join("%*d" % (len(t), row["tiers"][t]) for t in model.TIERS),
                                          row["pending_jobs"], row["pending_nodes"]))
    lines += ["learned forecast: %s" % text for _pool, text in sorted(doc["learned_forecast"].items())]
    lines.append("unservable jobs (no pool can ever serve them): %s" % (
        "; ".join("%s: %s" % (u["job"], u["reason"]) for u in doc["unservable"]) or "none"))
    # drains a person set (never touched by the controller) and the open day-2 cases
    lines.append("operator drains (left alone): %s" % (
        "; ".join("%s %s: %s" % (o["node"], o["state"], o["reason"]) for o in doc["operator_drains"]) or "none"))
    lines.append("day-2 cases: %s" % ("none" if not doc["day2_cases"] else ""))
    for c in doc["day2_cases"]:
        lines.append("  %-20s %-15s since %s%s  %s" % (c["node"], c["phase"], _when(c["since"]),
                                                      " (in flight)" if c["in_flight"] else "",
                                                      "-" if c["last_reason"] is None else c["last_reason"]))
    lines.append("rollouts in progress: %s" % ("none" if not world.rollouts else ""))
    lines += rollout_lines(world.rollouts, world.rollout_book)
    # day-2 "replace, then repair": which hot node went to which job in place of which failed
    # node, and whether it is schedulable yet (or why none was)
    found = doc["replacements"]
    lines.append("replacements (failed member of a running job -> hot node): %s" % ("none" if not found else ""))
    for r in found:
        # where the job restarts once requeued: its reservation and the nodes in it
        where = " in %s (%s)" % (r["reservation"], ",".join(r["reserve_nodes"])) if r["reservation"] else ""
        lines.append("  %s job %-8s %-20s -> %-20s %s%s" % (_when(r["at"]), r["job"] or "-", r["replaces"] or "-",
                                                           ",".join(r["nodes"]) or "(none)",
                                                           r["outcome"] or "in flight", where))
    # nodes handed to a technician: the ledger's reason names the record file (docs/day2.md)
    lines.append("break_fix (a technician's): %s" % ("none" if not doc["break_fix"] else ""))
    for node in doc["break_fix"]:
        lines.append("  %-20s since %s  %s" % (node["node"], _when(node["since"]), node["reason"] or "-"))
    lines.append("in flight: %s" % (", ".join("%s %s %s" % (d["id"], d["action"], ",".join(d["nodes"]))
                                              for d in doc["in_flight"]) or "nothing"))
    lines.append("last decisions:")
    for d in doc["last_decisions"]:
        lines.append("  %s %-4s %-10s %-9s %-24s %-30s %s" % (
            _when(d["at"]), d["id"], d["pool"] or "-", d["action"], ",".join(d["nodes"])[:24],
            (d["outcome"] or "in flight")[:30], d["reason"]))
    return "\n".join(lines)


def _decision(d):
    return {"id": d["id"], "at": d["at"], "pool": d.get("pool"), "action": d["action"], "nodes": list(d["nodes"] or []),
            "job": d.get("job"), "outcome": d.get("outcome"), "reason": d.get("reason")}


def status_document(world, in_flight, recent, holder, ledger_nodes=(), learned=None, day2=None):
    """The status as one JSON-ready dict (``controller status --json``; ``render_status`` writes
    it as text): times as epoch seconds or the ledger's own text, ``outcome`` None while in flight."""
    pools = {}
    for pool in sorted({n.pool for n in world.nodes}):
        tiers = Counter(n.tier for n in world.nodes if n.pool == pool)
        pending = [j for j in world.jobs if j.pool == pool and j.state == "PENDING"]
        pools[pool] = {"tiers": {t: tiers.get(t, 0) for t in model.TIERS}, "pending_jobs": len(pending),
                       "pending_nodes": sum(j.nodes for j in pending)}
    replacements = []
    for d in recent:
        if d["action"] == "resume" and codec.is_day2(d):
            extra = codec.extra_of(d)
            replacements.append(dict(_decision(d), replaces=extra.get("replaces"),
                                     reservation=extra.get("reservation") or None,
                                     reserve_nodes=list(extra.get("reserve_nodes") or [])))
    return {
        "lease": {"holder": holder[0], "until": holder[1] if holder[0] else None},
        "pools": pools,
        "unservable": [{"job": j.job_id, "reason": why} for j, why in world.unservable],
        "learned_forecast": dict(learned or {}),
        "operator_drains": [{"node": o.node, "state": o.state, "reason": o.reason}
                            for o in (day2.operator if day2 else ())],
        "day2_cases": [{"node": node, "phase": c.case.phase, "since": c.case.since, "in_flight": bool(c.in_flight),
                        "last_reason": c.reasons[-1][1] if c.reasons else None}
                       for node, c in sorted(world.cases.items())],
        "rollouts": _rollouts(world.rollouts, world.rollout_book),
        "replacements": replacements,
        "break_fix": [{"node": n["node"], "since": n.get("updated_at"), "reason": n.get("reason")}
                      for n in sorted((n for n in ledger_nodes if n.get("state") == records.states.BREAK_FIX),
                                      key=lambda n: n["node"])],
        "in_flight": [{"id": d["id"], "action": d["action"], "nodes": list(d["nodes"] or [])} for d in in_flight],
        "last_decisions": [_decision(d) for d in recent],
    }
