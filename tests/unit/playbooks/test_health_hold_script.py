"""playbooks/files/health_hold.sh, the hold around the day-2 idle health check
(playbooks/health_check.yml), against a stand-in Slurm (sinfo and scontrol as small scripts
on PATH that log every call and keep each node's state and reason in a file).

Without the hold, a job Slurm starts on a joined node after the check's look for a job step
shares the node with DCGM level 1 (docs/day2.md, "Idle health check race")."""
import os
import subprocess

from tests import slurm_stubs
from tests.helpers import ROOT

SCRIPT = os.path.join(ROOT, "playbooks", "files", "health_hold.sh")
REASON = "gpufleet:health check"



def _slurm(tmp_path, nodes, job_lands=()):
    return slurm_stubs.install_node_states(tmp_path, nodes, job_lands)


def _run(bindir, state, *args):
    env = dict(os.environ, PATH=str(bindir) + os.pathsep + os.environ["PATH"], SLURM_STATE=str(state))
    return subprocess.run(["bash", SCRIPT] + list(args), capture_output=True, text=True, env=env, check=False)


def _nodes(state):
    return {f[5:]: tuple(open(os.path.join(state, f)).read().strip().split("|", 1))
            for f in os.listdir(state) if f.startswith("node.")}


NODES = {"idle1": ("idle", "none"),                       # a joined node with no job: held, checked
         "hot1": ("drained", "gpufleet:hot (held)"),      # a hot node: already held, checked, kept held
         "busy1": ("mixed", "none"),                      # a job runs: never drained, never checked
         "ops1": ("drained*", "disk swap, ask Ana"),      # a person's drain, not responding: untouched
         "race1": ("idle", "none")}                       # a job lands before the drain: not checked


def test_hold_drains_only_idle_nodes_and_lists_only_nodes_no_job_can_reach(tmp_path):
    bindir, state = _slurm(tmp_path, NODES, job_lands=["race1"])
    run = _run(bindir, state, "hold", ",".join(NODES))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "drained idle1,race1"
    assert sorted(lines[1:]) == ["check hot1", "check idle1"]
    now = _nodes(state)
    assert now["idle1"] == ("drained", REASON) and now["race1"] == ("draining", REASON)
    assert now["hot1"] == NODES["hot1"] and now["busy1"] == NODES["busy1"] and now["ops1"] == NODES["ops1"]


def test_release_resumes_only_the_nodes_held_for_the_check(tmp_path):
    bindir, state = _slurm(tmp_path, NODES, job_lands=["race1"])
    assert _run(bindir, state, "hold", ",".join(NODES)).returncode == 0
    run = _run(bindir, state, "release", ",".join(NODES))
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "released idle1,race1"
    now = _nodes(state)
    assert now["idle1"] == ("idle", "none") and now["race1"] == ("mixed", "none")  # its job runs on
    # the hot node's hold and the person's drain are not the check's to undo
    assert now["hot1"] == NODES["hot1"] and now["ops1"] == NODES["ops1"]


def test_release_frees_a_node_a_killed_earlier_check_left_held(tmp_path):
    bindir, state = _slurm(tmp_path, {"idle1": ("drained", REASON), "hot1": ("drained", "gpufleet:hot")})
    run = _run(bindir, state, "release", "idle1,hot1")
    assert run.returncode == 0 and run.stdout.strip() == "released idle1"
    assert _nodes(state) == {"idle1": ("idle", "none"), "hot1": ("drained", "gpufleet:hot")}


def test_nothing_idle_changes_nothing(tmp_path):
    bindir, state = _slurm(tmp_path, {"busy1": ("allocated", "none"), "hot1": ("drained", "gpufleet:hot")})
    run = _run(bindir, state, "hold", "busy1,hot1")
    assert run.returncode == 0 and run.stdout.splitlines() == ["check hot1"]
    assert "scontrol" not in (state / "calls").read_text()
    run = _run(bindir, state, "release", "busy1,hot1")
    assert run.returncode == 0 and run.stdout == ""
    assert "scontrol" not in (state / "calls").read_text()


def test_a_wrong_mode_is_refused_with_the_usage(tmp_path):
    bindir, state = _slurm(tmp_path, {})
    run = _run(bindir, state, "check", "n1")
    assert run.returncode == 2 and "usage: health_hold.sh hold|release NODES" in run.stderr
