"""An image refresh on the lab with a failing canary, after the capacity, day-2 and fleet-view
scenarios (file order) left a controller running (lab["controller"]) on a lab with nodes in
service. The lab policy's day2 budget is 1: one node out at a time.

1. a second image version (the lab's pins under another version name) is built, signed and
   published; a refresh to a version that is not published is refused, naming the fix;
2. `gpufleet refresh start` to the new version: the controller picks one canary (its drain is
   the first rollout decision); a GPU fault is injected into the canary before its gate runs
   (imaging takes over a minute in the lab), so its recycle on the new version fails the gate;
3. the rollout halts by itself (phase rolling_back, reason "halted: 1 canary gate failure"),
   the fault is cleared and the canary is recycled back onto the previous version (rolled_back);
4. no other node was drained or recycled by the rollout: every other node still runs the old
   version in the ledger.

Run under the lab lock with the other controller scenarios:
  flock /tmp/gpufleet-lab.lock .venv/bin/python -m pytest tests/integration/controller -x -v
"""
import os
import time

import pytest
import yaml

from gpufleet.controller import records
from lab import controller_demo as demo
from tests.helpers import ROOT
from tests.integration.controller.steps import LAB_MARKS, POLICY, decisions, gpufleet, history, start_controller

pytestmark = LAB_MARKS

NEW = "2026.11.1"            # the lab image's pins under a release-shaped version name
OLD = "lab"
ROLLOUT_S = 2400             # canary drain + reimage + gate (fails) + halt, with margin
ROLLBACK_S = 1800            # the canary reimaged with the previous version, gate, readmit


def _build_new_version():
    """Pins of the lab image under version NEW, in a folder of the build tree (not packer/versions:
    the repo's catalogue of releases stays as it is)."""
    folder = os.path.join(ROOT, "build", "lab-refresh", "versions")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(ROOT, "packer", "versions", "lab.yml")) as handle:
        pins = yaml.safe_load(handle)
    pins["version"] = NEW
    with open(os.path.join(folder, NEW + ".yml"), "w") as handle:
        yaml.safe_dump(pins, handle, sort_keys=True)
    gpufleet("image", "build", NEW, "--versions-dir", folder, timeout=2400)
    gpufleet("lab", "publish", "--version", NEW)


def _rollout():
    led = demo.ledger()
    try:
        rows = records.rollouts(led, pool="lab")
        return rows[-1] if rows else None
    finally:
        led.close()


def _versions():
    led = demo.ledger()
    try:
        return {r["node"]: r.get("image_version") for r in records.node_records(led)}
    finally:
        led.close()


def _rollout_steps(rollout_id):
    return [d for d in decisions() if ((d.get("demand") or {}).get("action") or {}).get("rollout", {})
            .get("rollout_id") == rollout_id]


def _refresh(*args, check=True):
    return gpufleet("refresh", *args, "--lab", "--policy", POLICY, "--who", "lab-test", check=check, timeout=600)


def test_a_failing_canary_halts_the_refresh_and_leaves_every_other_node_on_the_old_version(lab):
    if lab.get("controller") is None or lab["controller"].proc.poll() is not None:
        lab["controller"] = start_controller()
    _build_new_version()
    refused = _refresh("start", "--pool", "lab", "--image-version", "2026.11.2", check=False)
    assert refused.returncode == 1 and "gpufleet lab publish --version 2026.11.2" in refused.stderr, refused.stderr
    demo.wait_for("two nodes in service, no rollout open", lambda: sum(
        1 for s in demo.states().values() if s in ("hot", "joined")) >= 2 and _rollout() is None, 900)
    before = _versions()
    assert {v for n, v in before.items() if demo.states().get(n) in ("hot", "joined")} == {OLD}, before
    started = _refresh("start", "--pool", "lab", "--image-version", NEW)
    assert "lab -> %s" % NEW in started.stdout, started.stdout
    rollout = demo.wait_for("the canary chosen", lambda: (_rollout() or {}).get("canaries") and _rollout(), ROLLOUT_S,
                            poll=1)
    canary, = rollout["canaries"]
    gpufleet("lab", "fault", canary, "faulty_gpu")
    try:
        demo.wait_for("the rollout halted", lambda: _rollout()["phase"] in ("rolling_back", "rolled_back"),
                      ROLLOUT_S, poll=5)
        halted = _rollout()
        assert "halted: 1 canary gate failure" in halted["reason"] and canary in halted["reason"], halted
        recycle = next(d for d in _rollout_steps(rollout["id"]) if d["action"] == "recycle")
        assert recycle["nodes"] == [canary] and recycle["outcome"].startswith("failed"), recycle
        assert recycle["demand"]["action"]["image"]["gpufleet_image_version"] == NEW, recycle
    finally:
        gpufleet("lab", "clear-faults", canary)
    demo.wait_for("the canary back on %s" % OLD, lambda: _rollout()["phase"] == "rolled_back", ROLLBACK_S, poll=5)
    steps = _rollout_steps(rollout["id"])
    touched = {n for d in steps for n in d["nodes"]}
    assert touched == {canary}, [(d["action"], d["nodes"], d["outcome"]) for d in steps]
    back = [d for d in steps if d["action"] == "recycle" and d["demand"]["action"]["rollout"]["role"] == "rollback"]
    assert back[-1]["outcome"] == "ok" and back[-1]["demand"]["action"]["image"]["gpufleet_image_version"] == OLD
    after = _versions()
    assert after[canary] == OLD, after
    assert {n: v for n, v in after.items() if n != canary and n in before} == \
        {n: v for n, v in before.items() if n != canary}, (before, after)
    shown = _refresh("status", "--pool", "lab")
    assert "phase rolled_back" in shown.stdout and "failed: %s" % canary in shown.stdout, shown.stdout
    status = gpufleet("controller", "status", "--lab", "--policy", POLICY, timeout=300)
    assert "rollouts in progress: none" in status.stdout, status.stdout


def _history(node, since):
    return [t for t in history() if t["node"] == node and demo._iso(t["at"]) >= since]


@pytest.mark.skipif(os.environ.get("GPUFLEET_REFRESH_ALL") != "1",
                    reason="kept out of make test for time (docs/benchmarks.md names its run): GPUFLEET_REFRESH_ALL=1 runs it")
def test_a_refresh_that_passes_its_canary_moves_every_node_in_service_then_a_parked_node_is_reimaged(lab):
    """After the halted rollout above: the same version again, no fault. The canary passes, the
    batches move every other node in service (day2.budget 1: one at a time), the rollout is
    done, and every node in service runs the new version. Then the pool's image is the new
    version: a job needing more nodes than are hot makes the planner bring up a parked node
    still on the old version (recycled, reason "reimage"), never wake it as it is. The times
    (start -> canary back, start -> done) are printed for docs/benchmarks.md, never asserted."""
    if lab.get("controller") is None or lab["controller"].proc.poll() is not None:
        lab["controller"] = start_controller()
    demo.wait_for("no rollout open", lambda: _rollout() is None or _rollout()["phase"] in ("rolled_back", "done"), 900)
    demo.wait_for("two nodes in service", lambda: sum(1 for s in demo.states().values() if s in ("hot", "joined")) >= 2,
                  900)
    t_start = time.time()
    load = os.getloadavg()[0]
    _refresh("start", "--pool", "lab", "--image-version", NEW)
    rollout = demo.wait_for("the canary chosen", lambda: (_rollout() or {}).get("canaries") and _rollout(), ROLLOUT_S,
                            poll=1)
    canary, = rollout["canaries"]
    done = demo.wait_for("the rollout done", lambda: _rollout()["phase"] in ("done", "rolling_back", "rolled_back")
                         and _rollout(), 3600, poll=5)
    t_done = time.time()
    assert done["phase"] == "done", done
    steps = _rollout_steps(rollout["id"])
    recycles = [d for d in steps if d["action"] == "recycle"]
    assert recycles and all(d["outcome"] == "ok" for d in recycles), [(d["nodes"], d["outcome"]) for d in recycles]
    assert {d["demand"]["action"]["image"]["gpufleet_image_version"] for d in recycles} == {NEW}, recycles
    roles = [d["demand"]["action"]["rollout"]["role"] for d in recycles]
    assert roles[0] == "canary" and recycles[0]["nodes"] == [canary], roles
    moved = {n for d in recycles for n in d["nodes"]}
    versions, states = _versions(), demo.states()
    in_service = {n for n, s in states.items() if s in ("hot", "joined")}
    assert in_service and {versions[n] for n in in_service} == {NEW}, (states, versions)
    canary_back = min(d["at"] for d in steps if d["action"] == "readmit" and d["nodes"] == [canary])
    print("refresh of the lab pool to %s (load %.1f at start): %d node(s) moved (%s; canary %s), start -> canary "
          "readmitted %.0f s, start -> done %.0f s" % (NEW, load, len(moved), ",".join(sorted(moved)), canary,
                                                      canary_back - t_start, t_done - t_start))
    if len(moved) > 1:
        assert "batch" in roles, roles
    # the pool's image is NEW now: a parked node on OLD is brought up again, not woken as it is
    parked_old = sorted(n for n, s in states.items() if s == "parked" and versions.get(n) == OLD)
    if not parked_old:
        pytest.skip("no parked node left on %s to show the pool image (states %s)" % (OLD, states))
    hot = sum(1 for s in states.values() if s == "hot")
    since = time.time()
    job_id = demo.sbatch(hot + 1, "pool-image", sleep=5)
    try:
        woken = demo.wait_for("a parked node recycled onto %s" % NEW, lambda: next(
            (n for n in parked_old if any(t["to_state"] == "recycling" for t in _history(n, since))), None), 900)
        reason = next(t["why"] for t in _history(woken, since) if t["to_state"] == "recycling")
        assert "reimage" in reason, reason
        demo.wait_for("%s back on %s" % (woken, NEW), lambda: _versions()[woken] == NEW and demo.states()[woken] in (
            "hot", "joined", "parked"), 1800, poll=5)
        assert "waking" not in [t["to_state"] for t in _history(woken, since)]
    finally:
        demo.slurm("scancel", job_id)
