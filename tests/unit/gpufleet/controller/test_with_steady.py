"""The controller running a ``steady`` policy: its adapters, the real planner, the ledger, with
fake Slurm (FakeSource) and fake playbook runs (Runs). The policy is the lab's
(lab/config/capacity.yml) with a ``steady`` block added, written as a user writes it."""
import os

from gpufleet.capacity.model import Job
from gpufleet.controller import records, status
from gpufleet.controller.actuator import Actuator
from gpufleet.controller.inventory import Host
from gpufleet.controller.loop import Reconciler
from gpufleet.controller.planning import Planning
from gpufleet.controller.slurm_json import SlurmNode
from tests.unit.gpufleet.controller.conftest import FakeSource, Runs

LAB_POLICY = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "lab", "config", "capacity.yml")
NODES = tuple("lab-r1n%d" % i for i in range(1, 9))
HOSTS = {n: Host(name=n, groups=("gpufleet", "sku_lab"), sku="lab") for n in NODES}
TO_HOT = ("enrolled", "inspected", "imaging", "configuring", "validating", "ready", "hot")
SET_UP = 1000.0       # the ledger fixture's clock: every node's gate passed then


def policy(tmp_path, steady, hot_floor=2):
    """The lab policy with ``steady`` (YAML lines under the pool) and its hot floor set."""
    with open(LAB_POLICY) as handle:
        text = handle.read()
    floors, gate = "    floors: {hot: 2, warm: 0}\n", "    gate_validity: 1d\n"
    assert floors in text and gate in text, "lab/config/capacity.yml changed: update this test"
    block = "    steady:\n" + "".join("      %s\n" % line for line in steady)
    text = text.replace(floors, "    floors: {hot: %d, warm: 0}\n" % hot_floor).replace(gate, gate + block)
    path = tmp_path / "capacity.yml"
    path.write_text(text)
    return str(path)


def put(ledger, state, *nodes):
    """Nodes through the bring-up to hot (gate passed at SET_UP), then joined or parked."""
    for node in nodes:
        for target in TO_HOT + {"hot": (), "joined": ("joined",), "parked": ("parked",)}[state]:
            ledger.transition(node, target, "test", "setup")


class Clock:
    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now


class LabRuns(Runs):
    """conftest's Runs, with park.yml's own path from joined: draining, then parked."""

    def _effects(self, playbook, extravars):
        if playbook == "park":
            led = records.open_ledger(self.ledger_path)
            try:
                for node in extravars["gpufleet_targets"].split(","):
                    if (led.get(node) or {}).get("state") == "joined":
                        led.transition(node, "draining", "fake-run", playbook)
            finally:
                led.close()
        super()._effects(playbook, extravars)


def reconciler(ledger, policy_path, now, jobs=(), slurm=None):
    runs, clock = LabRuns(ledger_path=ledger.path), Clock(now)
    rec = Reconciler(FakeSource(jobs, slurm), ledger, Planning(policy_path), Actuator("inv", run=runs), HOSTS,
                     "ctl", clock=clock)
    return rec, runs, clock


def slurm(idle=(), busy=(), last_busy=None):
    """Slurm's view of joined nodes (a joined node Slurm does not list is unavailable)."""
    nodes = {n: SlurmNode(n, "IDLE", last_busy=last_busy) for n in idle}
    nodes.update((n, SlurmNode(n, "ALLOCATED")) for n in busy)
    return nodes


def running(*nodes):
    return [Job("r%d" % i, 1, partition="batch", state="RUNNING", nodes_assigned=(n,)) for i, n in enumerate(nodes)]


def launched(runs, playbook):
    return [(extra["gpufleet_targets"], extra) for name, extra, _run in runs.calls if name == playbook]


def decided(ledger, kind):
    return [d for d in records.decisions(ledger) if d["action"] == kind]


def test_free_hot_nodes_above_the_hot_floor_are_resumed_to_joined_through_admit(ledger, tmp_path):
    # headroom 50 % and step 25 % of the pool's 8 nodes: 4 and 2; no demand: the level is 4
    path = policy(tmp_path, ["enabled: true", "headroom: 50%", "step: 25%", "hold: 10m"])
    put(ledger, "hot", *NODES[:4])
    rec, runs, _clock = reconciler(ledger, path, SET_UP + 30)
    result = rec.once()
    rec.drain()
    steady = result.plan.notes["lab"]["steady"]
    assert (steady["level"], steady["peak_nodes"], steady["headroom"], steady["step"]) == (4, 0, 4, 2), steady
    assert (steady["headroom_set"], steady["step_set"], steady["pool_nodes"]) == ("50%", "25%", 8), steady
    assert [(a.kind, a.nodes) for _i, a in result.started] == [("resume", (n,)) for n in NODES[:2]]
    why = "%s hot above the hot floor 2 (steady level 4): joining it so jobs start on it at once"
    assert launched(runs, "admit") == [(n, {"gpufleet_targets": n, "gpufleet_reason": why % n,
                                            "gpufleet_admit_nodes": [n], "gpufleet_admit_job": "",
                                            "gpufleet_gang_id": ""}) for n in NODES[:2]]
    assert len(runs.calls) == 2                                # nothing else: no wake, no park
    assert [(d["nodes"], d["job"], d["reason"], d["outcome"]) for d in decided(ledger, "resume")] == [
        ([n], None, why % n, "ok") for n in NODES[:2]]
    # the two above the floor joined, the floor's two still hot
    assert [ledger.get(n)["state"] for n in NODES[:4]] == ["joined", "joined", "hot", "hot"]


def test_idle_joined_nodes_within_the_level_stay_joined_past_their_idle_time(ledger, tmp_path):
    path = policy(tmp_path, ["enabled: true", "headroom: 6", "step: 2", "hold: 10m"])
    put(ledger, "hot", *NODES[:2])
    put(ledger, "joined", *NODES[2:6])
    rec, runs, _clock = reconciler(ledger, path, SET_UP + 600, slurm=slurm(idle=NODES[2:6]))  # idle 10m > 90s
    result = rec.once()
    rec.drain()
    assert runs.calls == [] and records.decisions(ledger) == [], runs.calls     # no park, no hold
    notes = result.plan.notes["lab"]
    assert notes["supply"]["idle"] == 4 and notes["supply"]["hot"] == 2
    steady = notes["steady"]
    assert (steady["level"], steady["peak_nodes"], steady["headroom"], steady["step"], steady["hold_s"]) == (
        6, 0, 6, 2, 600.0), steady
    assert notes["kept"] == ["%s idle 10m (idle time 90s): kept joined: 6 node(s) powered, steady level 6" % n
                             for n in NODES[2:6]]
    assert "'steady': {" in status.render_plan(result.plan)    # what `controller once` prints


def test_demand_rising_past_the_level_wakes_the_missing_nodes_in_one_pass(ledger, tmp_path):
    path = policy(tmp_path, ["enabled: true", "headroom: 25%", "step: 25%", "hold: 10m"], hot_floor=0)
    put(ledger, "joined", *NODES[:4])
    put(ledger, "parked", *NODES[4:])
    rec, runs, clock = reconciler(ledger, path, SET_UP + 60, jobs=running(*NODES[:2]),
                                  slurm=slurm(idle=NODES[2:4], busy=NODES[:2]))
    first = rec.once()      # 2 busy + 2 spare: at the level 4
    assert first.started == [] and first.plan.notes["lab"]["steady"]["level"] == 4
    pending = [Job("p%d" % i, 1, partition="batch", reason="Resources", submit_time=SET_UP + 100) for i in range(4)]
    rec.source = FakeSource(running(*NODES[:2]) + pending, slurm(idle=NODES[2:4], busy=NODES[:2]))
    clock.now += 60
    second = rec.once()     # 2 busy + 4 pending + headroom 2: the level is 8, 4 powered
    rec.drain()
    assert second.plan.notes["lab"]["steady"]["level"] == 8
    woken = [a.nodes[0] for _i, a in second.started if a.kind == "wake"]
    assert woken == list(NODES[4:]) and len(second.started) == 4, second.started
    # two for the jobs the two idle nodes cannot serve, then the level's missing two, together
    reasons = [a.reason for _i, a in second.started]
    assert [r.startswith("job p") for r in reasons] == [True, True, False, False], reasons
    assert reasons[2:] == ["pool lab steady level 8: %d node(s) powered: waking %s" % (k, n)
                           for k, n in ((6, NODES[6]), (7, NODES[7]))]
    assert len(woken) <= Planning(path).pools()["lab"].max_concurrent_bringups
    assert launched(runs, "wake") == [(n, {"gpufleet_targets": n, "gpufleet_reason": r, "gpufleet_wake_regate": False})
                                      for n, r in zip(NODES[4:], reasons)]
    assert [(d["nodes"], d["outcome"]) for d in decided(ledger, "wake")] == [([n], "ok") for n in NODES[4:]]
    clock.now += 60
    third = rec.once()      # the woken nodes are hot: two resumed for the jobs, two by the level
    rec.drain()
    assert [(a.kind, a.nodes[0], a.job_id) for _i, a in third.started] == [
        ("resume", NODES[4], "p2"), ("resume", NODES[5], "p3"), ("resume", NODES[6], None),
        ("resume", NODES[7], None)], third.started
    assert "steady level 8" in third.started[3][1].reason
    assert [extra["gpufleet_admit_job"] for _n, extra in launched(runs, "admit")] == ["p2", "p3", "", ""]


def test_the_level_falls_after_the_hold_and_the_surplus_parks_in_one_pass(ledger, tmp_path):
    # headroom and step 2 nodes, hold 5m; the demand history is what the controller's own
    # passes record, one row a minute
    path = policy(tmp_path, ["enabled: true", "headroom: 2", "step: 2", "hold: 5m"], hot_floor=0)
    put(ledger, "joined", *NODES[:6])
    put(ledger, "parked", *NODES[6:])
    busy, spare = NODES[:4], NODES[4:6]
    # passes at the start of each minute, so each row's minute is the pass's time
    rec, runs, clock = reconciler(ledger, path, 1020.0, jobs=running(*busy), slurm=slurm(spare, busy))
    levels = []
    for _minute in range(3):             # 4 nodes busy: the level is 4 + 2
        levels.append(rec.once().plan.notes["lab"]["steady"]["level"])
        clock.now += 60
    ended = clock.now - 60
    rec.source = FakeSource((), dict(slurm(spare), **slurm(busy, last_busy=ended)))
    while clock.now - 300 <= ended:      # the jobs ended, their peak still within the hold
        result = rec.once()
        levels.append(result.plan.notes["lab"]["steady"]["level"])
        assert result.plan.notes["lab"]["steady"]["peak_nodes"] == 4
        clock.now += 60
    assert levels == [6] * 8 and runs.calls == [], (levels, runs.calls)
    assert len(records.demand_history(ledger)) == 8
    fell = rec.once()                    # the whole hold at 0: the level is 2, 6 powered
    rec.drain()
    assert fell.plan.notes["lab"]["steady"]["level"] == 2
    assert "gap_note" not in fell.plan.notes["lab"]["steady"]
    parked = [a.nodes[0] for _i, a in fell.started if a.kind == "park"]
    assert len(fell.started) == 4 and sorted(parked) == sorted(spare + NODES[:2]), fell.started
    assert [(n, extra["gpufleet_park_power_off"]) for n, extra in launched(runs, "park")] == [(n, True) for n in parked]
    assert [(d["nodes"], d["outcome"]) for d in decided(ledger, "park")] == [([n], "ok") for n in parked]
    assert sorted(n for n in NODES if ledger.get(n)["state"] == "joined") == list(NODES[2:4])
