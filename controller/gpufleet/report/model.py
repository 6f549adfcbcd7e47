"""Gather what the report shows from the ledger and the gate reports (read-only; gpufleet.view.gate_files)."""
from gpufleet.controller.supply import epoch
from gpufleet.view.gate_files import gate_reports

__all__ = ["collect", "gate_reports"]


def _checks(report):
    rows = []
    for phase in report.get("phases") or []:
        for check in phase.get("checks") or []:
            rows.append({"phase": phase.get("name"), "name": check.get("name"), "measured": check.get("measured"),
                         "threshold": check.get("threshold"), "unit": check.get("unit") or "",
                         "verdict": check.get("verdict"), "reason": check.get("reason") or ""})
    return rows


def _segments(history, end):
    """[(state, start, stop)] per node from its transitions; the last one runs to ``end``."""
    segments = []
    for index, item in enumerate(history):
        start = epoch(item["at"])
        stop = epoch(history[index + 1]["at"]) if index + 1 < len(history) else end
        segments.append({"state": item["to_state"], "start": start, "stop": max(stop, start),
                         "why": item["why"], "who": item["who"]})
    return segments


def collect(ledger, gate_dir=None, run_id=None, nodes=None, gang_id=None, generated_at=None):
    """The report data: nodes (state, image, gate verdict, checks, timeline) and the gang."""
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import gang as gang_mod
    records = [r for r in ledger.nodes() if nodes is None or r["node"] in nodes]
    history = ledger.history()
    if run_id:
        touched = set(h["node"] for h in history if h["run_id"] == run_id)
        records = [r for r in records if r["node"] in touched] or records
    reports = gate_reports(gate_dir)
    end = generated_at or (max([epoch(h["at"]) for h in history] or [0]) + 1)
    out = []
    for record in records:
        mine = [h for h in history if h["node"] == record["node"]]
        report = reports.get(record["node"]) or {}
        out.append(dict(record, gate_verdict=report.get("verdict"), gate_reason=report.get("reason") or "",
                        gate_profile=report.get("profile"), checks=_checks(report),
                        timeline=_segments(mine, end), transitions=len(mine)))
    data = {"nodes": out, "run_id": run_id, "generated_at": end, "ledger": ledger.path}
    if gang_id:
        data["gang"] = gang_mod.status(ledger, gang_id)
    return data
