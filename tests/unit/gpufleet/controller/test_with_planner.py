"""The controller's adapters against the real planner (no fakes between them)."""
import os

from gpufleet.capacity.model import Job
from gpufleet.controller import records
from gpufleet.controller.actuator import Actuator
from gpufleet.controller.inventory import Host
from gpufleet.controller.loop import Reconciler
from gpufleet.controller.planning import Planning, member_of
from tests.unit.gpufleet.controller.conftest import FakeSource, Runs

POLICY = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "lab", "config", "capacity.yml")
HOSTS = {n: Host(name=n, groups=("gpufleet", "sku_lab"), sku="lab") for n in ("lab-r1n1", "lab-r1n2", "lab-r1n3",
                                                                            "lab-r1n4")}


def reconciler(ledger, jobs=(), runs=None):
    runs = runs or Runs(ledger_path=ledger.path)
    rec = Reconciler(FakeSource(jobs), ledger, Planning(POLICY), Actuator("inv", run=runs), HOSTS, "ctl",
                     clock=lambda: 1000.0)
    return rec, runs


def test_membership_rules():
    from gpufleet.capacity.policy import Members
    host = Host(name="gpu-r1n1", groups=("rack_r1",), features=("fabric=ib",))
    assert member_of(Members(groups=("rack_r1",)), host)
    assert member_of(Members(patterns=("gpu-r1n*",)), host)
    assert member_of(Members(labels={"fabric": "ib"}), host)
    assert not member_of(Members(labels={"fabric": "roce"}), host)


def test_an_empty_lab_fills_its_hot_floor_with_bringups(ledger):
    rec, runs = reconciler(ledger)
    result = rec.once()
    rec.drain()
    kinds = [(a.kind, a.nodes) for _i, a in result.started]
    assert sum(len(n) for k, n in kinds if k == "bringup") == 2, kinds
    assert all(call[0] == "bringup" and call[1]["gpufleet_bringup_hold"] for call in runs.calls)
    assert {d["outcome"] for d in records.decisions(ledger)} == {"ok"}


def test_a_pending_gang_is_reserved_and_its_book_survives_into_the_next_pass(ledger):
    job = Job("9", 4, partition="batch", reason="Resources", submit_time=900.0)
    rec, runs = reconciler(ledger, jobs=[job], runs=Runs())
    runs.gate.clear()
    first = rec.once()
    kinds = [a.kind for _i, a in first.started]
    assert "reserve" in kinds, kinds
    reserve = next(a for _i, a in first.started if a.kind == "reserve")
    assert reserve.job_id == "9" and len(reserve.nodes) == 4
    gangs = rec.observe(rec.read_world(1000.0), 1000.0).gangs
    assert [(g.job_id, len(g.members)) for g in gangs] == [("9", 4)]
    second = rec.once()
    assert "reserve" not in [a.kind for _i, a in second.started]    # formed once, not again
    runs.gate.set()
    rec.drain()


def test_a_gang_whose_admission_is_running_is_not_formed_again(ledger):
    for node in ("lab-r1n1", "lab-r1n2"):
        for target in ("enrolled", "inspected", "imaging", "configuring", "validating", "ready", "hot"):
            ledger.transition(node, target, "test", "setup")
    job = Job("9", 2, partition="batch", reason="Resources", submit_time=900.0)
    rec, runs = reconciler(ledger, jobs=[job], runs=Runs())
    rec.read_world = _with_hot_gate(rec.read_world)
    runs.gate.clear()                                   # the admission keeps running
    first = [a.kind for _i, a in rec.once().started]
    assert first[:2] == ["reserve", "admit"], first   # (then bring-ups refilling the hot floor)
    second = [a.kind for _i, a in rec.once().started]
    assert "reserve" not in second, second              # the job's gang is still in progress
    assert [g.job_id for g in rec.observe(rec.read_world(1000.0), 1000.0).gangs] == ["9"]
    runs.gate.set()
    rec.drain()


def _with_hot_gate(read):
    """The fake Slurm lists no node; give the hot nodes a fresh gate and Slurm's held state."""
    from dataclasses import replace

    def read_world(now=None):
        world = read(now)
        return replace(world, nodes=tuple(replace(v, tier="hot") if v.state == "hot" else v for v in world.nodes))
    return read_world


def _hot_on(ledger, nodes, version):
    for node in nodes:
        for target in ("enrolled", "inspected", "imaging", "configuring", "validating", "ready", "hot"):
            ledger.transition(node, target, "test", "setup", image_version=version)


def test_after_a_finished_rollout_hot_nodes_on_the_old_image_are_brought_up_on_the_new_one(ledger):
    from gpufleet.controller.images import Catalogue
    _hot_on(ledger, ("lab-r1n1", "lab-r1n2"), "v1")
    rec, runs = reconciler(ledger, runs=Runs())
    rec.catalogue = Catalogue({"gpufleet_image_manifest_template": "/srv/img/{version}/manifest.json",
                               "gpufleet_image_url_template": "https://media/{version}.tgz"})
    rid = records.start_rollout(ledger, "lab", "v1", "v2", "test", "new driver")
    # while the rollout is under way both versions serve: no v1 node is brought up again
    planned = rec.once(dry_run=True).plan.actions
    assert not {n for a in planned if a.kind == "bringup" for n in a.nodes} & {"lab-r1n1", "lab-r1n2"}
    records.set_rollout_phase(ledger, rid, "done", "all moved")
    started = rec.once().started
    rec.drain()
    assert sorted(n for _i, a in started if a.kind == "bringup" for n in a.nodes) == ["lab-r1n1", "lab-r1n2"]
    (playbook, extra, _run), = runs.calls
    assert playbook == "bringup" and extra["gpufleet_image_version"] == "v2"
    assert extra["gpufleet_image_url"] == "https://media/v2.tgz"
    assert [t["to_state"] for t in ledger.history("lab-r1n1")][-1] == "recycling"
    assert ledger.history("lab-r1n1")[-1]["why"].startswith("reimage: ")


def test_without_a_usable_catalogue_the_old_image_is_left_alone_and_said_once(ledger):
    import io
    from gpufleet.controller.images import Catalogue
    _hot_on(ledger, ("lab-r1n1", "lab-r1n2"), "v1")
    rec, runs = reconciler(ledger, runs=Runs())
    rec.catalogue, rec.out = Catalogue({}), io.StringIO()
    rid = records.start_rollout(ledger, "lab", "v1", "v2", "test", "new driver")
    records.set_rollout_phase(ledger, rid, "done", "all moved")
    assert rec.once().started == [] and rec.once().started == []
    said = rec.out.getvalue()
    assert said.count("its last rollout left image v2, but No image catalogue") == 1, said


class _EndedNotCollected(Runs):
    """Runs whose ledger effects happen at once, then the run keeps going until ``gate`` is set:
    the window where the ledger says hot and the controller has not collected the run."""

    def __call__(self, playbook, extravars, run_id):
        self.calls.append((playbook, extravars, run_id))
        self._effects(playbook if isinstance(playbook, str) else playbook[-1], extravars)
        self.effects_done.release()
        self.gate.wait(10)
        return "successful", 0


def test_a_job_arriving_while_the_hot_floors_bring_ups_end_uncollected_gets_them_not_cold_ones(ledger):
    import threading
    runs = _EndedNotCollected(ledger_path=ledger.path)
    runs.effects_done = threading.Semaphore(0)
    runs.gate.clear()
    rec, _runs = reconciler(ledger, runs=runs)
    rec.read_world = _with_hot_gate(rec.read_world)
    floor = [n for _i, a in rec.once().started if a.kind == "bringup" for n in a.nodes]
    assert len(floor) == 2, floor
    for _run in runs.calls:                              # the runs recorded hot and still run
        assert runs.effects_done.acquire(timeout=10)
    assert {ledger.get(n)["state"] for n in floor} == {"hot"}
    rec.source = FakeSource([Job("7", 2, partition="batch", reason="Resources", submit_time=990.0)])
    second = [a for _i, a in rec.once().started]
    # the gang is formed from the floor's two nodes and no node is brought up for it (the
    # bring-ups started refill the hot floor the gang took); its admission waits for the runs to
    # be collected (never a second machine action on a node)
    assert [(a.kind, a.nodes) for a in second if a.kind != "bringup"] == [("reserve", tuple(sorted(floor)))]
    assert [a.gang_id for a in second if a.kind == "bringup"] == [None, None], second
    assert all("floor" in a.reason for a in second if a.kind == "bringup"), second
    runs.gate.set()
    rec.drain()
    third = [(a.kind, a.nodes) for _i, a in rec.once().started]
    assert ("admit", tuple(sorted(floor))) in third, third
    rec.drain()
