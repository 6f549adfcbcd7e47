"""A gate tool that hangs is killed at its timeout and the check fails closed.

The one gate unit test that starts real processes (``sh`` and ``sleep``, no GPU tool): a
fake ``dcgmi`` prints a partial line, leaves a grandchild running and sleeps. The runner
must kill the whole process group at the probe's timeout, and the gate must fail the
check with the timeout as the reason. No assertion is on elapsed time.
"""
import os
import time

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.phases import GateContext, run_gate
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.profile import profile_from_dict
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.runner import TIMEOUT, Runner
from tests.helpers import need_tool

HANG = """#!/bin/sh
echo '{"DCGM Diagnostic": {"test_categories": ['
sleep 300 &
echo $! > "%s"
sleep 300
"""


def _alive(pid):
    """True while ``pid`` runs (a zombie waiting to be reaped counts as dead)."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (IOError, OSError):
        return False


def _gone(pid, within=10.0):
    """Wait (bounded) for the kernel to finish killing ``pid``; SIGKILL is asynchronous."""
    deadline = time.monotonic() + within
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


@pytest.fixture
def hanging_tool(tmp_path):
    need_tool("sh")
    need_tool("sleep")
    pid_file = tmp_path / "grandchild.pid"
    tool = tmp_path / "dcgmi"
    tool.write_text(HANG % pid_file)
    tool.chmod(0o755)
    return str(tool), pid_file


def test_runner_kills_the_process_group_at_the_timeout(hanging_tool):
    tool, pid_file = hanging_tool
    run = Runner(tool_paths={"dcgmi": tool}).run("dcgm_diag", "dcgmi", ["diag", "-r", "3", "-j"], 1)
    assert (run.error, run.rc) == (TIMEOUT, None)
    assert "did not finish within 1s and was killed" in run.reason
    assert run.stdout.startswith('{"DCGM Diagnostic"')  # what it printed before hanging is kept
    assert _gone(int(pid_file.read_text()))  # the grandchild died with its group


def test_a_hanging_tool_fails_the_gate_closed(hanging_tool):
    tool, pid_file = hanging_tool
    profile = profile_from_dict({"profile": "p", "checks": {"dcgm_diag": {"level": 3, "unit": "tests"}}}, "p")
    saved = {}
    ctx = GateContext(profile, runner=Runner(tool_paths={"dcgmi": tool}),
                      options={"timeouts": {"dcgm_diag": 1}, "skip_checks": []},
                      raw_sink=lambda key, out, err: saved.setdefault(key, out))
    outcome = run_gate(ctx, phases=["gpu"])
    assert outcome["verdict"] == "fail" and outcome["failed_check"] == "dcgm_diag"
    assert outcome["reason"].startswith("dcgm_diag: dcgmi did not finish")
    assert "dcgm_diag: dcgmi did not finish within 1s and was killed" in outcome["reason"]
    (result,) = [r for p in outcome["phases"] for r in p["results"] if r.name == "dcgm_diag"]
    assert result.measured is None and not result.passed
    assert saved["dcgm_diag"].startswith('{"DCGM Diagnostic"')
    assert _gone(int(pid_file.read_text()))
