"""The break_fix record a technician acts on: what the stage decided, plus what only I/O can read.

The day-2 stage (pure) decides break_fix with the node's reasons over time and its failed
recycle times. The BMC's log (SEL) is read by ``playbooks/break_fix.yml`` (the collection's
redfish_info, in the actuator's pool: a BMC that takes a minute to answer never stalls a pass
or the lease), which writes ``<report_dir>/break_fix/<node>.sel.json``. When that run ends,
whatever its outcome, the loop completes the record here with the node's last gate failures
(``<report_dir>/gate/<node>.node.json``, written by playbooks/tasks/gate.yml) and the SEL,
writes ``<report_dir>/break_fix/<node>.json`` and moves the node to break_fix. A log that
cannot be read is named in the record ("SEL unreadable: <reason>"); it never stops the
transition (the node is failing already). No credential is read or written here: the SEL
file holds only the entries, notes and the module's error text.
"""
import json
import os
import time

from gpufleet.controller.supply import epoch, failures_since_good
from gpufleet.day2 import repair

__all__ = ["gate_failures", "sel_entries", "complete", "write", "sel_path", "record_path", "for_failed_bringups"]

_MAX_ENTRIES = 50


def sel_path(report_dir, node):
    return os.path.join(report_dir, "break_fix", "%s.sel.json" % node)


def record_path(report_dir, node):
    return os.path.join(report_dir, "break_fix", "%s.json" % node)


def _load(path, what):
    """(JSON document, None) or (None, why it cannot be used)."""
    try:
        with open(path) as handle:
            return json.load(handle), None
    except FileNotFoundError:
        return None, "no %s at %s" % (what, path)
    except (OSError, ValueError) as exc:
        return None, "%s at %s unreadable: %s" % (what, path, exc)


def _fabric_of_the_same_gate(report_dir, node, node_report):
    """The node's fabric report (``<node>.fabric.json``: the fabric phase runs after the node
    phases, in a set) when it belongs to the same gate run as ``node_report``, else None."""
    fabric, _why = _load(os.path.join(report_dir, "gate", "%s.fabric.json" % node), "fabric report")
    if not isinstance(fabric, dict) or not isinstance(fabric.get("phases"), list):
        return None
    return fabric if str(fabric.get("started") or "") >= str(node_report.get("started") or "") else None


def gate_failures(report_dir, node):
    """The failed checks of the node's last gate ("phase/check: reason"): its node report and
    the fabric report of the same run (a slow HCA fails only there; the lab's break_fix record
    once said "passed" for it), or one line saying why there are none to show (no report,
    unreadable, or the last gate passed)."""
    report, why = _load(os.path.join(report_dir, "gate", "%s.node.json" % node), "gate report")
    if report is None:
        return ("last gate report: %s" % why,)
    if not isinstance(report, dict) or not isinstance(report.get("phases"), list):
        return ("last gate report of %s has no phases (not a gate report)" % node,)
    reports = [report] + [r for r in (_fabric_of_the_same_gate(report_dir, node, report),) if r]
    found = ["%s/%s: %s" % (phase.get("name"), check.get("name"), check.get("reason"))
             for one in reports for phase in one["phases"] if isinstance(phase, dict)
             for check in phase.get("checks") or () if isinstance(check, dict) and check.get("verdict") == "fail"]
    if found:
        return tuple(found)
    for one in reports:
        if one.get("verdict") not in (None, "pass"):
            return ("%s: %s" % (one.get("failed_phase"), one.get("reason")),)
    return ("last gate report %s (%s) passed" % (report.get("report_id"), report.get("finished")),)


def _line(entry):
    return "%s %s %s [%s%s] %s" % (entry.get("created") or "(no date)", entry.get("severity") or "-",
                                   entry.get("service") or "-", entry.get("message_id") or "-",
                                   ", " + entry["sensor_type"] if entry.get("sensor_type") else "",
                                   entry.get("message") or "")


def sel_entries(report_dir, node, run_outcome="ok"):
    """(log lines newest first, notes): "SEL unreadable: <reason>" when the read gave nothing."""
    read, why = _load(sel_path(report_dir, node), "SEL read")
    if read is None:
        return (), ("SEL unreadable: %s (break_fix read: %s)" % (why, run_outcome),)
    if not isinstance(read, dict) or not isinstance(read.get("entries"), list):
        return (), ("SEL unreadable: %s" % (read.get("error") if isinstance(read, dict) and read.get("error")
                                            else "the read wrote no entry list"),)
    notes = tuple(str(n) for n in read.get("notes") or ())
    return tuple(_line(e) for e in read["entries"][:_MAX_ENTRIES] if isinstance(e, dict)), notes


def complete(record, report_dir, run_outcome="ok"):
    """The stage's record dict with gate failures and the SEL filled in (a new dict)."""
    node = record["node"]
    log, notes = sel_entries(report_dir, node, run_outcome)
    case = repair.Case(node, record["pool"], "recycle_failed", 0.0,
                       failed_recycles=tuple(record.get("failed_recycles") or ()))
    full = repair.break_fix_record(case, [tuple(r) for r in record.get("reasons") or ()],
                                   gate_failures(report_dir, node), log,
                                   failed_what=record.get("failed_what") or "recycle")
    done = dict(node=full.node, pool=full.pool, reasons=[list(r) for r in full.reasons],
                failed_recycles=list(full.failed_recycles), gate_failures=list(full.gate_failures),
                bmc_log=list(full.bmc_log), bmc_log_notes=list(notes), summary=full.summary,
                failed_what=record.get("failed_what") or "recycle")
    done["summary"] += "; SEL: %s" % ("%d entr%s" % (len(log), "y" if len(log) == 1 else "ies") if log
                                      else "; ".join(notes) or "no entries")
    return done


def for_failed_bringups(node, pool, history, parse_time=epoch):
    """The record for a node the planner hands to a human after failed bring-ups in a row.

    ``history``: the node's ledger transitions, oldest first; ``parse_time``: ISO text -> epoch.
    Its reasons are the failures the planner counted (supply.failures_since_good), each with
    the step it failed in; the SEL and the last gate's failures are added by ``complete``, as
    for a day-2 break_fix, so a technician gets one kind of record whichever path sent the node.
    """
    failures = [(parse_time(step["at"]), "failed in %s: %s" % (step.get("from_state") or "?",
                                                                step.get("why") or "no reason recorded"))
                for step in failures_since_good(history)]
    return dict(node=node, pool=pool, reasons=[list(f) for f in failures],
                failed_recycles=[t for t, _why in failures], failed_what="bring-up", gate_failures=[],
                bmc_log=[], summary="%s: %d failed bring-up(s) in a row" % (node, len(failures)))


def write(report_dir, record, now=None):
    """Write the record as ``<report_dir>/break_fix/<node>.json`` (atomically); returns the path."""
    path = record_path(report_dir, record["node"])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as handle:
        json.dump(dict(record, written_at=time.time() if now is None else now), handle, indent=2, sort_keys=True)
    os.replace(tmp, path)
    return path
