"""The saved gate reports (``<node>.*.json`` in the gate report folder), read-only.

The view reads them for the gate failures it shows; the bring-up report
(gpufleet.report.model) reads them through this file too.
"""
import glob
import json
import os

__all__ = ["gate_reports"]


def _merge(first, second):
    """One node's reports (single-node phases, then the fabric phase it led) as one."""
    merged = dict(first)
    merged["phases"] = list(first.get("phases") or []) + list(second.get("phases") or [])
    if second.get("verdict") == "fail" and first.get("verdict") != "fail":
        merged.update(verdict="fail", reason=second.get("reason"), failed_phase=second.get("failed_phase"))
    return merged


def gate_reports(gate_dir):
    """Saved gate reports by node; a node's ``<node>.*.json`` files are merged in name order."""
    reports = {}
    if not gate_dir:  # no folder given (a PostgreSQL ledger has none beside it): not the cwd
        return reports
    for path in sorted(glob.glob(os.path.join(gate_dir, "*.json"))):
        try:
            with open(path) as handle:
                report = json.load(handle)
        except (OSError, ValueError):
            continue
        node = report.get("node") or os.path.basename(path).split(".")[0]
        reports[node] = _merge(reports[node], report) if node in reports else report
    return reports
