from gpufleet.capacity.model import Action, NodeView
from gpufleet.controller import records
from gpufleet.controller.stages import World
from gpufleet.work.action import REPAIR
from gpufleet.work.kinds import expected_state
from tests.unit.gpufleet.controller.conftest import Runs, bringup


def test_bringups_of_one_pass_run_together_with_good_nodes_as_fabric_peers(ledger, make_reconciler):
    rec, runs, _p = make_reconciler([bringup("n1"), bringup("n2")])
    views = (NodeView("n1", "lab", "cold", ""), NodeView("n2", "lab", "cold", ""),
             NodeView("n3", "lab", "hot", "hot"), NodeView("n4", "lab", "busy", "joined", jobs=("5",)))
    rec.read_world = lambda now=None: World((), (), (), views)
    rec.once()
    rec.drain()
    (playbook, extra, run_id), = runs.calls
    assert playbook == "bringup" and extra["gpufleet_targets"] == "n1,n2"
    assert extra["gpufleet_fabric_peers"] == ["n3"]        # hot or idle, never a node running a job
    assert [d["outcome"] for d in records.decisions(ledger)] == ["ok", "ok"]


def test_a_node_parked_in_the_same_pass_is_never_offered_as_a_fabric_peer(ledger, make_reconciler):
    park = Action(kind="park", pool="lab", nodes=("n3",), reason="hot 2 above floor 1")
    rec, runs, _p = make_reconciler([bringup("n1"), park])     # the bring-up launches first
    views = (NodeView("n1", "lab", "cold", ""), NodeView("n3", "lab", "hot", "hot"),
             NodeView("n4", "lab", "hot", "hot"))
    rec.read_world = lambda now=None: World((), (), (), views)
    rec.once()
    rec.drain()
    extra, = [extra for playbook, extra, _r in runs.calls if playbook == "bringup"]
    assert extra["gpufleet_fabric_peers"] == ["n4"]


def test_a_node_lent_to_a_run_in_flight_is_offered_last(ledger, make_reconciler):
    rec, runs, _p = make_reconciler([bringup("n1")])
    views = (NodeView("n1", "lab", "cold", ""), NodeView("n3", "lab", "hot", "hot"),
             NodeView("n4", "lab", "hot", "hot"))
    rec.read_world = lambda now=None: World((), (), (), views)
    runs.gate.clear()                                     # a recycle of n2 with n3 as its peer runs
    recycle = Action("recycle", "lab", ("n2",), "drained", peers=("n3",), stage=REPAIR)
    rec.launcher.launch([(rec.journal.intent(recycle, (), (), 1000.0), recycle)], {})
    rec.once()
    runs.gate.set()
    rec.drain()
    extra, = [extra for playbook, extra, _r in runs.calls if playbook == "bringup"]
    assert extra["gpufleet_fabric_peers"] == ["n4", "n3"]


def test_a_node_day2_suspects_is_never_offered_as_a_fabric_peer(ledger, make_reconciler):
    """Lab: a hot node a health checker had just drained (a slow HCA; its signal not yet
    persisted) was the fabric peer of a healthy node's bring-up: both failed the fabric phase."""
    from gpufleet.controller.slurm_json import SlurmNode
    rec, runs, _p = make_reconciler([bringup("n1")])
    views = (NodeView("n1", "lab", "cold", ""), NodeView("n3", "lab", "hot", "hot"),
             NodeView("n4", "lab", "hot", "hot"))
    nhc = {"n3": SlurmNode("n3", "IDLE", ("DRAIN",), reason="NHC: check_hca failed")}

    def read_world(now=None):
        rec._slurm_nodes = nhc
        return World((), (), (), views)
    rec.read_world = read_world
    rec.once()
    rec.drain()
    (playbook, extra, _run_id), = runs.calls
    assert playbook == "bringup" and extra["gpufleet_fabric_peers"] == ["n4"]


def test_each_decision_of_a_batch_gets_its_own_nodes_outcome(ledger, make_reconciler):
    class OneFails(Runs):
        def _effects(self, playbook, extravars):
            super()._effects(playbook, dict(extravars, gpufleet_targets="n1"))
            led = records.open_ledger(self.ledger_path)
            for target in ("enrolled", "inspected", "imaging", "failed"):
                led.transition("n2", target, "fake-run", "gpu phase: GPU 3 FAULTY")
            led.close()
    rec, runs, _p = make_reconciler([bringup("n1"), bringup("n2")], runs=OneFails())
    rec.once()
    rec.drain()
    outcomes = {d["nodes"][0]: d["outcome"] for d in records.decisions(ledger)}
    assert outcomes["n1"] == "ok"
    assert outcomes["n2"].startswith("failed: n2 is failed (gpu phase: GPU 3 FAULTY")


def test_a_node_its_run_dropped_unreachable_is_recorded_failed_not_left_validating(ledger, make_reconciler):
    """Ansible drops an unreachable host without its rescue, and when that was every target it
    ends the run before the playbook's last play can record it: the controller records it."""
    class Dropped(Runs):
        def __call__(self, playbook, extravars, run_id):
            self.calls.append((playbook, extravars, run_id))
            led = records.open_ledger(self.ledger_path)
            for target in ("enrolled", "inspected", "imaging", "configuring", "validating"):
                led.transition("n1", target, "fake-run", "bring-up " + target)
            for target in ("enrolled", "inspected", "imaging", "failed"):   # n2: its rescue recorded it
                led.transition("n2", target, "fake-run", "gpu phase: GPU 3 FAULTY")
            led.close()
            return "failed", 4
    rec, _runs, _p = make_reconciler([bringup("n1"), bringup("n2")], runs=Dropped())
    rec.once()
    rec.drain()
    n1, n2 = ledger.get("n1"), ledger.get("n2")
    assert n1["state"] == "failed"
    assert n1["reason"].startswith("n1 stopped answering while validating: its bringup run ended without recording "
                                   "it (Ansible dropped it as unreachable; failed: playbook failed (rc=4)"), n1
    assert (n2["state"], n2["reason"]) == ("failed", "gpu phase: GPU 3 FAULTY")    # recorded already: untouched
    outcomes = {d["nodes"][0]: d["outcome"] for d in records.decisions(ledger)}
    assert outcomes["n1"].startswith("failed: n1 is failed (n1 stopped answering while validating")
    assert [h["run_id"] for h in ledger.history("n1")][-1].startswith("ctl-")


def test_expected_states():
    act = lambda kind, **kw: Action(kind=kind, pool="p", nodes=("n",), reason="r", **kw)   # noqa: E731
    assert expected_state(act("bringup")) == "hot"
    assert expected_state(act("bringup", target_tier="warm")) == "parked"
    assert expected_state(act("wake", target_tier="joined")) == "joined"
    assert expected_state(act("admit")) == "joined" and expected_state(act("break_fix")) is None


def test_bringups_run_per_fabric_set_with_peers_of_the_same_set(ledger, make_reconciler):
    from dataclasses import replace
    rec, runs, _p = make_reconciler([bringup("n1"), bringup("n2")])
    rec.hosts = {name: replace(host, fabric_set="su1" if name in ("n1", "n3") else "su2")
                 for name, host in rec.hosts.items()}
    views = (NodeView("n1", "lab", "cold", ""), NodeView("n2", "lab", "cold", ""),
             NodeView("n3", "lab", "hot", "hot"), NodeView("n4", "lab", "idle", "joined"))
    rec.read_world = lambda now=None: World((), (), (), views)
    rec.once()
    rec.drain()
    runs_by_target = {extra["gpufleet_targets"]: extra["gpufleet_fabric_peers"] for _pb, extra, _r in runs.calls}
    assert runs_by_target == {"n1": ["n3"], "n2": ["n4"]}    # two runs, never a peer across sets
