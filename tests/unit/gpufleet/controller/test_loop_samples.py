"""The loop records Slurm's node states for the fleet view's seam: on change, never in dry run."""
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import decisions
from gpufleet.controller.slurm_json import SlurmNode
from tests.unit.gpufleet.controller.conftest import FakeSource


def test_a_pass_records_changed_node_states_and_a_dry_run_none(ledger, make_reconciler):
    nodes = {"n1": SlurmNode("n1", "IDLE", ("DRAIN",), "held"), "n2": SlurmNode("n2", "ALLOCATED")}
    rec, _runs, _p = make_reconciler(source=FakeSource(nodes=nodes))
    rec.once(dry_run=True)
    assert decisions.node_samples(ledger) == []
    rec.once()
    rec.once()
    rows = decisions.node_samples(ledger)
    assert [(r["node"], r["slurm_state"], r["reason"]) for r in rows] == [
        ("n1", "IDLE+DRAIN", "held"), ("n2", "ALLOCATED", None)]
