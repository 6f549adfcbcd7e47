"""The break_fix record: gate failures from the last gate report, the SEL the playbook read."""
import json
import os

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate import report
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.results import CheckResult, failed_closed
from gpufleet.controller import breakfix

RECORD = dict(node="n1", pool="lab", reasons=[[100.0, "slurm slurm_drain: NHC: GPU lost"]],
              failed_recycles=[200.0, 300.0], gate_failures=[], bmc_log=[], summary="x")


def gate_report(report_dir, node, results, verdict="fail", phase="gpu", kind="node", started=None):
    outcome = {"verdict": verdict, "failed_phase": phase if verdict == "fail" else None,
               "failed_check": None, "reason": "r", "duration": 1.0,
               "phases": [{"name": phase, "verdict": verdict, "results": results}]}
    os.makedirs(os.path.join(report_dir, "gate"), exist_ok=True)
    built = report.build_report(outcome, {"report_id": "rep-%s" % kind, "node": node})
    if started:
        built["started"] = started
    with open(os.path.join(report_dir, "gate", "%s.%s.json" % (node, kind)), "w") as handle:
        json.dump(built, handle)


def sel(report_dir, node, body):
    os.makedirs(os.path.join(report_dir, "break_fix"), exist_ok=True)
    with open(breakfix.sel_path(report_dir, node), "w") as handle:
        handle.write(body if isinstance(body, str) else json.dumps(body))


ENTRY = {"service": "system:Log1", "id": "2", "created": "2012-03-07T14:45:00Z", "severity": "Critical",
         "message": "Temperature threshold exceeded", "message_id": "0x592E28", "sensor_type": "Temperature"}


def test_the_record_carries_failed_checks_and_the_sel(tmp_path):
    gate_report(str(tmp_path), "n1", [
        CheckResult("gpu_count", "gpu", 8, 8, "", "pass", "8 GPUs"),
        failed_closed("xid", "gpu", "XID 79 on GPU 3 (fallen off the bus)"),
        failed_closed("ecc", "gpu", "dcgmi not found on PATH")])
    sel(str(tmp_path), "n1", {"entries": [ENTRY], "notes": [], "error": None})
    done = breakfix.complete(RECORD, str(tmp_path))
    assert done["gate_failures"] == ["gpu/xid: XID 79 on GPU 3 (fallen off the bus)",
                                     "gpu/ecc: dcgmi not found on PATH"]
    assert done["bmc_log"] == ["2012-03-07T14:45:00Z Critical system:Log1 [0x592E28, Temperature] "
                               "Temperature threshold exceeded"]
    assert done["reasons"] == [[100.0, "slurm slurm_drain: NHC: GPU lost"]]
    assert "2 failed recycle(s)" in done["summary"] and "gpu/xid" in done["summary"]
    assert done["summary"].endswith("SEL: 1 entry")
    path = breakfix.write(str(tmp_path), done, now=5.0)
    assert json.load(open(path))["bmc_log"] == done["bmc_log"] and path.endswith("break_fix/n1.json")


def test_an_unreadable_bmc_is_named_in_the_record(tmp_path):
    sel(str(tmp_path), "n1", {"entries": None, "notes": [], "error": "BMC of node n1 did not answer: timeout"})
    done = breakfix.complete(RECORD, str(tmp_path))
    assert done["bmc_log"] == [] and done["bmc_log_notes"] == ["SEL unreadable: BMC of node n1 did not answer: timeout"]
    assert "SEL unreadable: BMC of node n1 did not answer" in done["summary"]
    assert done["gate_failures"] == ["last gate report: no gate report at %s" % os.path.join(
        str(tmp_path), "gate", "n1.node.json")]


def test_a_read_that_wrote_nothing_or_garbage_is_unreadable_with_the_run_outcome(tmp_path):
    done = breakfix.complete(RECORD, str(tmp_path), "failed: playbook failed (rc=2)")
    assert done["bmc_log_notes"][0].startswith("SEL unreadable: no SEL read at ")
    assert "rc=2" in done["bmc_log_notes"][0]
    sel(str(tmp_path), "n1", "{not json")
    assert breakfix.complete(RECORD, str(tmp_path))["bmc_log_notes"][0].startswith("SEL unreadable: SEL read at")


def test_a_bmc_without_logs_keeps_its_note_and_a_passed_gate_says_so(tmp_path):
    sel(str(tmp_path), "n1", {"entries": [], "notes": ["system /redfish/v1/Systems/1 offers no LogServices"]})
    gate_report(str(tmp_path), "n1", [CheckResult("gpu_count", "gpu", 8, 8, "", "pass", "8 GPUs")], verdict="pass")
    done = breakfix.complete(RECORD, str(tmp_path))
    assert done["bmc_log"] == [] and "offers no LogServices" in done["summary"]
    assert done["gate_failures"] == ["last gate report rep-node (None) passed"]


def test_a_fabric_phase_failure_of_the_same_gate_is_in_the_record(tmp_path):
    """Lab: a slow HCA passes every node phase and fails ib_write_bw in the fabric phase (its own
    report, <node>.fabric.json); the record said "passed"."""
    ok = [CheckResult("gpu_count", "gpu", 8, 8, "", "pass", "8 GPUs")]
    slow = [failed_closed("ib_write_bw", "fabric", "ib_write_bw: 96.5 Gb/s (worst: mlx5_1) is below the floor")]
    gate_report(str(tmp_path), "n1", ok, verdict="pass", started="2026-11-25T03:44:50Z")
    gate_report(str(tmp_path), "n1", slow, phase="fabric", kind="fabric", started="2026-11-25T03:45:10Z")
    assert breakfix.complete(RECORD, str(tmp_path))["gate_failures"] == [
        "fabric/ib_write_bw: ib_write_bw: 96.5 Gb/s (worst: mlx5_1) is below the floor"]
    # a fabric report of an older gate run is not this gate's
    gate_report(str(tmp_path), "n1", slow, phase="fabric", kind="fabric", started="2026-11-24T01:00:00Z")
    assert breakfix.complete(RECORD, str(tmp_path))["gate_failures"] == ["last gate report rep-node (None) passed"]


def test_the_bring_up_record_counts_the_failures_since_the_node_was_last_good():
    steps = [("imaging", "failed", "old failure"), ("failed", "imaging", "retry"), ("imaging", "ready", "gate ok"),
             ("ready", "joined", "admitted"), ("joined", "recycling", "reimage"),
             ("recycling", "failed", "pxe timeout"), ("failed", "imaging", "retry"),
             ("imaging", "failed", "gate: nvlink down")]
    history = [dict(from_state=a, to_state=b, why=w, at=float(i)) for i, (a, b, w) in enumerate(steps)]
    record = breakfix.for_failed_bringups("n1", "lab", history, float)
    assert record["failed_recycles"] == [5.0, 7.0] and record["failed_what"] == "bring-up"
    assert record["reasons"] == [[5.0, "failed in recycling: pxe timeout"], [7.0, "failed in imaging: gate: nvlink down"]]
