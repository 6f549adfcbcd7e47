from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import decisions
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
from gpufleet.controller.sampling import SampleRecorder
from gpufleet.controller.slurm_json import SlurmNode
from gpufleet.view.categories import slurm_category


def test_only_changes_are_written_and_read_back_as_seam_categories(tmp_path):
    book = Ledger(str(tmp_path / "ledger.sqlite"), clock=lambda: 100.0)
    recorder = SampleRecorder()
    idle = {"n1": SlurmNode("n1", "IDLE"), "n2": SlurmNode("n2", "IDLE", ("DRAIN",), "held")}
    assert recorder.record(book, idle, 10.0) == 2
    assert recorder.record(book, idle, 20.0) == 0
    assert recorder.record(book, dict(idle, n1=SlurmNode("n1", "ALLOCATED")), 30.0) == 1
    rows = decisions.node_samples(book)
    book.close()
    assert [(r["at"], r["node"], r["slurm_state"], r["reason"]) for r in rows] == [
        (10.0, "n1", "IDLE", None), (10.0, "n2", "IDLE+DRAIN", "held"), (30.0, "n1", "ALLOCATED", None)]
    assert [slurm_category(r["slurm_state"]) for r in rows] == ["idle", "draining", "busy"]
