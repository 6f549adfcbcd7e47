"""The lab end to end, in order (each test starts from the state the previous one left):

1. gang rollback: a gate fault injected into one of 8 freshly imaged nodes -> nothing admitted,
   the faulty node failed with the reason, the other 7 validated and back in the warm pool;
2. crash convergence: the failed node is recycled, the controller is killed mid-way, and the
   re-run converges with every transition recorded exactly once;
3. the demo's gang: all 8 nodes admitted together, resumed under one reservation, and
   ``srun -N8 hostname`` runs on them.

Drives the real pieces: BMC emulators (lab/bmc), the node manager and its verifying
installer (lab/twin), the signed lab image, the lifecycle playbooks through `gpufleet run`
(ansible-runner), the acceptance gate on each node, and Debian's slurmctld.
"""
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from tests.helpers import ROOT, ensure_base_image, need_docker

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GPUFLEET = os.path.join(ROOT, ".venv", "bin", "gpufleet")
LEDGER = os.path.join(ROOT, "build", "lab", "ledger.sqlite")
NODES = ["lab-r%dn%d" % (r, s) for r in (1, 2) for s in (1, 2, 3, 4)]


def gpufleet(*args, timeout=1200, check=True):
    proc = subprocess.run([GPUFLEET] + list(args), cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        pytest.fail("gpufleet %s failed (%d):\n%s\n%s" % (" ".join(args), proc.returncode,
                                                          proc.stdout[-4000:], proc.stderr[-3000:]))
    return proc


def query(sql, *params):
    conn = sqlite3.connect(LEDGER)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def states():
    return dict(query("SELECT node, state FROM nodes"))


def fresh_lab():
    gpufleet("lab", "down", "--purge", timeout=300)
    gpufleet("lab", "up", timeout=600)
    gpufleet("lab", "publish", "--version", "lab")


@pytest.fixture(scope="module")
def lab():
    need_docker()
    ensure_base_image()
    gpufleet("image", "build", "lab", "--generate-key", timeout=1500)
    fresh_lab()
    yield
    gpufleet("lab", "down", timeout=300, check=False)


def test_gang_rollback_admits_no_node_when_one_fails_the_gate(lab):
    gpufleet("lab", "fault", "lab-r1n3", "degraded_nvlink", "--param", "gpu=2", "--param", "factor=0.25")
    proc = gpufleet("run", "gang", "--lab", "-e", "gpufleet_gang_id=ci-rollback", "-e", "gpufleet_gang_size=8",
                    "-e", "gpufleet_gang_sku=lab", check=False)
    assert proc.returncode != 0, proc.stdout[-3000:]
    now = states()
    assert now["lab-r1n3"] == "failed", now
    reason = query("SELECT reason FROM nodes WHERE node = ?", "lab-r1n3")[0][0]
    assert "nvlink" in reason.lower() or "nvbandwidth" in reason.lower(), reason
    healthy = [n for n in NODES if n != "lab-r1n3"]
    assert [now[n] for n in healthy] == ["ready"] * 7, now  # back in the warm pool
    assert query("SELECT count(*) FROM nodes WHERE state = 'joined' OR gang_id IS NOT NULL") == [(0,)]
    assert query("SELECT status FROM gangs WHERE gang_id = 'ci-rollback'") == [("rolled_back",)]
    sinfo = subprocess.run(["docker", "exec", "gpufleet-lab-slurmctld", "sinfo", "-N", "-h", "-o", "%N %t"],
                           capture_output=True, text=True, check=False).stdout
    resumed = [line for line in sinfo.splitlines() if line.split()[1].startswith(("idle", "alloc", "mix"))]
    assert resumed == [], sinfo  # no node of the gang was admitted to Slurm
    assert "report:" in proc.stdout and "lab-r1n3" in open(proc.stdout.split("markdown: ")[1].split()[0]).read()


def _kill_run(run_id):
    """SIGKILL the ansible-playbook of a run (ansible-runner starts it in its own session)."""
    marker = "/build/runs/%s/" % run_id
    for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                cmdline = handle.read().decode(errors="replace")
        except OSError:
            continue
        if "ansible-playbook" in cmdline and marker in cmdline:
            os.kill(int(pid), signal.SIGKILL)


def _kill_when(node, wanted, proc, run_id, deadline):
    """SIGKILL the whole controller (gpufleet, ansible-runner, ansible-playbook) once ``node``
    is recorded in one of the ``wanted`` states."""
    while time.time() < deadline and proc.poll() is None:
        if states().get(node) in wanted:
            os.killpg(proc.pid, signal.SIGKILL)
            _kill_run(run_id)
            proc.wait()
            return True
        time.sleep(1)
    return False


def test_killed_recycle_rerun_converges_without_lost_or_duplicated_records(lab):
    """Retry the failed node (fault cleared): recycle it back to the warm pool, killing the
    controller mid-way; the re-run finishes the job and every transition is recorded once."""
    gpufleet("lab", "clear-faults", "lab-r1n3")
    before = query("SELECT count(*) FROM transitions WHERE node = 'lab-r1n3'")[0][0]
    args = ["run", "recycle", "--lab", "-e", "gpufleet_targets=lab-r1n3", "-e", "gpufleet_recycle_rejoin=false",
            "-e", "gpufleet_fabric_peers=[lab-r1n4]", "-e", "gpufleet_reason=ci retry after fault cleared"]
    first = subprocess.Popen([GPUFLEET] + args + ["--run-id", "ci-recycle-1"], cwd=ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    assert _kill_when("lab-r1n3", ("configuring", "validating"), first, "ci-recycle-1", time.time() + 900), states()
    gpufleet(*(args + ["--run-id", "ci-recycle-2"]))
    assert states()["lab-r1n3"] == "ready"
    rows = query("SELECT seq, from_state, to_state, run_id FROM transitions WHERE node = 'lab-r1n3' ORDER BY seq")
    assert [r[0] for r in rows] == list(range(1, len(rows) + 1))
    assert [r[2] for r in rows[before:]] == ["recycling", "imaging", "configuring", "validating", "ready"], rows
    assert {r[3] for r in rows[before:]} == {"ci-recycle-1", "ci-recycle-2"}


def test_demo_gang_of_8_is_admitted_and_runs_srun(lab):
    """The demo's gang: 8 lab nodes (now all validated in the warm pool) admitted together."""
    proc = gpufleet("run", "gang", "--lab", "--run-id", "ci-demo", "-e", "gpufleet_gang_id=ci-demo",
                    "-e", "gpufleet_gang_size=8", "-e", "gpufleet_gang_sku=lab")
    assert states() == dict((n, "joined") for n in NODES)
    assert query("SELECT status FROM gangs WHERE gang_id = 'ci-demo'") == [("admitted",)]
    assert query("SELECT count(*) FROM gang_members WHERE gang_id = 'ci-demo' AND source = 'pool'") == [(8,)]
    srun = subprocess.run(["docker", "exec", "gpufleet-lab-slurmctld", "srun", "--reservation=ci-demo", "-N8",
                           "hostname"], capture_output=True, text=True, timeout=180, check=False)
    assert srun.returncode == 0, srun.stderr
    assert sorted(srun.stdout.split()) == NODES
    page = open(proc.stdout.split("report: ")[1].split()[0]).read()
    assert all(n in page for n in NODES) and "<svg" in page and "ci-demo" in page


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
