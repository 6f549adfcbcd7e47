# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Gate reports: the JSON document, JUnit XML, raw tool outputs and a short text table.

Layout under ``report_dir``::

    <report_id>/report.json   the full report (schema below)
    <report_id>/junit.xml     one testsuite per phase, one testcase per check
    <report_id>/summary.txt   the text table
    <report_id>/inputs.json   what the run was given (expected release, firmware inventory, peers)
    <report_id>/raw/<probe>.txt          a tool's stdout, exactly as the parser read it
    <report_id>/raw/<probe>.stderr.txt   its stderr, when there was any
    latest.json               a copy of the newest report.json (cluster_join reads it)

Files are written to a temporary name and renamed, so a reader never sees half a report.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import xml.etree.ElementTree as ET

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.results import FAIL, PASS, SKIP

__all__ = ["SCHEMA", "build_report", "junit_xml", "text_table", "write_report", "write_raw", "raw_name", "write_inputs"]

SCHEMA = 1
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def raw_name(probe):
    """File name of a probe's raw output (``raw/<probe>.txt``)."""
    return _SAFE.sub("_", probe) + ".txt"


def _phase_entry(phase):
    checks = [dict(c.to_dict(), **phase.get("extra", {}).get(c.name, {})) for c in phase["results"]]
    return {"name": phase["name"], "verdict": phase["verdict"], "duration_s": round(phase.get("duration", 0.0), 3),
            "note": phase.get("note", ""), "checks": checks}


def build_report(outcome, meta):
    """The report mapping. ``outcome`` comes from ``phases.run_gate``; ``meta`` adds node facts.

    Top-level keys: schema, report_id, node, verdict, failed_phase, failed_check, reason,
    image_version, profile, sku, run_all, started, finished, duration_s, counts, phases.
    """
    results = [r for p in outcome["phases"] for r in p["results"]]
    counts = {v: sum(1 for r in results if r.verdict == v) for v in (PASS, FAIL, SKIP)}
    return {
        "schema": SCHEMA,
        "report_id": meta["report_id"],
        "node": meta["node"],
        "verdict": outcome["verdict"],
        "failed_phase": outcome["failed_phase"],
        "failed_check": outcome["failed_check"],
        "reason": outcome["reason"],
        "image_version": meta.get("image_version"),
        "profile": meta.get("profile"),
        "sku": meta.get("sku"),
        "run_all": bool(meta.get("run_all")),
        "started": meta.get("started"),
        "finished": meta.get("finished"),
        "duration_s": round(outcome.get("duration", 0.0), 3),
        "counts": counts,
        "phases": [_phase_entry(p) for p in outcome["phases"]],
    }


def _num(value):
    if isinstance(value, float):
        return ("%.2f" % value).rstrip("0").rstrip(".")
    if isinstance(value, (list, tuple)):
        return ",".join(_num(v) for v in value) if value else "none"
    if isinstance(value, dict):
        return ",".join("%s=%s" % (k, _num(v)) for k, v in value.items())
    return "-" if value is None else str(value)


def _clip(text, width):
    return text if len(text) <= width else text[:width - 3] + "..."


def text_table(report):
    """A short fixed-width table: one line per check, then the verdict and reason."""
    rows = [("PHASE", "CHECK", "VERDICT", "MEASURED", "THRESHOLD", "UNIT")]
    for phase in report["phases"]:
        for check in phase["checks"]:
            rows.append((phase["name"], check["name"], check["verdict"].upper(), _clip(_num(check["measured"]), 28),
                         _clip(_num(check["threshold"]), 28), check["unit"] or ""))
        if not phase["checks"]:
            rows.append((phase["name"], "-", phase["verdict"].upper(), "-", "-", phase.get("note", "")))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    lines.append("")
    lines.append("verdict: %s (report %s, node %s)" % (report["verdict"].upper(), report["report_id"], report["node"]))
    if report["verdict"] != PASS:
        lines.append("failed phase: %s; check: %s" % (report["failed_phase"], report.get("failed_check")))
        lines.append("reason: %s" % report["reason"])
        # Every failed check's reason, so what failed where (GPU, test, HCA) shows without the JSON.
        failed = [c for p in report["phases"] for c in p["checks"] if c["verdict"] == FAIL]
        if len(failed) > 1 or (failed and failed[0]["reason"] != report["reason"]):
            lines.append("failed checks:")
            lines.extend("  - %s" % _clip(c["reason"], 400) for c in failed)
    return "\n".join(lines) + "\n"


def junit_xml(report):
    """JUnit XML text: ``testsuites`` > one ``testsuite`` per phase > one ``testcase`` per check."""
    root = ET.Element("testsuites", name="gpufleet-gate %s" % report["node"])
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for phase in report["phases"]:
        suite = ET.SubElement(root, "testsuite", name=phase["name"], time="%.3f" % phase["duration_s"])
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for check in phase["checks"]:
            case = ET.SubElement(suite, "testcase", classname="gpufleet.gate.%s" % phase["name"], name=check["name"])
            counts["tests"] += 1
            if check["verdict"] == FAIL:
                counts["failures"] += 1
                ET.SubElement(case, "failure", message=check["reason"], type="GateCheckFailed").text = check["reason"]
            elif check["verdict"] == SKIP:
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=check["reason"])
            ET.SubElement(case, "system-out").text = "measured=%s threshold=%s unit=%s" % (
                _num(check["measured"]), _num(check["threshold"]), check["unit"])
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", "%.3f" % report["duration_s"])
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _atomic_write(path, text, mode=0o644):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as handle:
        handle.write(text)
    os.chmod(tmp, mode)
    os.rename(tmp, path)


def write_raw(report_path, probe, stdout, stderr=""):
    """Save a probe's raw output under ``<report_path>/raw/``; return the relative file name."""
    folder = os.path.join(report_path, "raw")
    if not os.path.isdir(folder):
        os.makedirs(folder, 0o755)
    name = raw_name(probe)
    _atomic_write(os.path.join(folder, name), stdout or "")
    if stderr:
        _atomic_write(os.path.join(folder, name[:-4] + ".stderr.txt"), stderr)
    return "raw/" + name


def write_report(report_dir, report):
    """Write report.json, junit.xml, summary.txt and latest.json; return the report folder."""
    path = os.path.join(report_dir, report["report_id"])
    if not os.path.isdir(path):
        os.makedirs(path, 0o755)
    text = json.dumps(report, indent=2, sort_keys=True) + "\n"
    _atomic_write(os.path.join(path, "report.json"), text)
    _atomic_write(os.path.join(path, "junit.xml"), junit_xml(report))
    _atomic_write(os.path.join(path, "summary.txt"), text_table(report))
    _atomic_write(os.path.join(report_dir, "latest.json"), text)
    return path


def write_inputs(report_path, inputs):
    """Save the run's inputs (``inputs.json``) so the report can be re-judged offline."""
    _atomic_write(os.path.join(report_path, "inputs.json"),
                  json.dumps(inputs, indent=1, sort_keys=True, default=str) + "\n")
