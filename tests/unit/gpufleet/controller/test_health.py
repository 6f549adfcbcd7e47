"""Day-2 idle health check: idle nodes in service only, failures (and runs that could not judge) as signals."""
import json

import pytest

from gpufleet.capacity.model import NodeView
from gpufleet.controller.health import HealthWatch, failed_checks, signals_from

VIEWS = (NodeView("n1", "lab", "hot", "hot"), NodeView("n2", "lab", "idle", "joined"),
         NodeView("n3", "lab", "idle", "joined", jobs=("42",)), NodeView("n4", "lab", "warm", "parked"))


@pytest.mark.parametrize("reading,found", [
    ({"verdict": "pass", "failed_checks": []}, ()),
    ({"skipped": True, "reason": "a job step runs on the node"}, ()),
    ({"verdict": "fail", "failed_checks": ["xid", "dcgm_diag"]}, ("xid", "dcgm_diag")),
    ({"verdict": "fail", "failed_checks": [], "reason": "r"}, ("health check failed without naming a check (r)",)),
    ({"error": "dcgmi: tool was not found"}, ("health check could not run: dcgmi: tool was not found",)),
    ({}, ("health check gave no verdict (None)",)),
    ("garbage", ("health check gave no verdict (None)",)),
])
def test_what_counts_as_a_failed_check(reading, found):
    assert failed_checks(reading) == found


def test_signals_only_for_nodes_still_in_service():
    readings = {"n1": {"verdict": "fail", "failed_checks": ["xid"]}, "n4": {"verdict": "fail", "failed_checks": ["xid"]},
                "n2": {"error": "unreachable"}, "n9": {"verdict": "fail", "failed_checks": ["ecc_uncorrectable"]}}
    found = [(s.node, s.source, s.kind, s.reason) for s in signals_from(readings, VIEWS, 5.0)]
    assert found == [("n1", "health_check", "health_check", "idle health check xid failed"),
                     ("n2", "health_check", "health_check", "idle health check health check could not run: "
                                                            "unreachable failed")]


def test_only_idle_nodes_in_service_are_checked_once_per_interval(tmp_path):
    calls = []

    def run(targets, out_path, run_id):
        calls.append((targets, run_id))
        with open(out_path, "w") as handle:
            json.dump({"n2": {"verdict": "fail", "failed_checks": ["row_remap_pending"]}}, handle)
        return 0
    watch = HealthWatch(run, 1800.0, str(tmp_path))
    assert watch(VIEWS, 0.0) == ()
    watch.wait(10)
    assert [(s.node, s.reason) for s in watch(VIEWS, 10.0)] == [("n2", "idle health check row_remap_pending failed")]
    assert calls == [(["n1", "n2"], "health-check")]          # n3 runs a job, n4 is parked
    assert watch(VIEWS, 100.0) == ()                          # used once; the next run waits for the interval
    assert len(calls) == 1
