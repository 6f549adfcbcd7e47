from gpufleet.capacity.model import Job
from gpufleet.controller import supply
from gpufleet.controller.slurm_json import SlurmNode
from tests.unit.gpufleet.controller.conftest import HOSTS, FakePlanning


class Seen(FakePlanning):
    def __init__(self):
        super().__init__()
        self.calls = []

    def classify(self, pool, state, slurm_state, gate_at, now, jobs, image, pool_image=None):
        self.calls.append((state, slurm_state, gate_at, jobs))
        return super().classify(pool, state, slurm_state, gate_at, now, jobs, image)


def rec(node, state, at="2026-11-24T10:00:00.000000Z"):
    return {"node": node, "state": state, "updated_at": at, "image_version": "lab", "gang_id": None}


def test_views_cover_every_pool_host_and_pass_ledger_slurm_gate_and_jobs_to_the_planner():
    history = {"n1": [{"to_state": "ready", "at": "2026-11-24T09:00:00.000000Z"},
                      {"to_state": "hot", "at": "2026-11-24T10:00:00.000000Z"}]}
    planning = Seen()
    jobs = [Job("5", 1, state="RUNNING", nodes_assigned=("n2",))]
    slurm = {"n1": SlurmNode("n1", "IDLE", ("DRAIN",)), "n3": SlurmNode("n3", "IDLE", (), last_busy=1795500000.0)}
    views = supply.node_views(HOSTS, [rec("n1", "hot"), rec("n2", "joined"), rec("n3", "joined")], slurm, jobs,
                              planning, now=0, history_of=lambda n: history.get(n, []))
    by = {v.node: v for v in views}
    assert sorted(by) == ["n1", "n2", "n3", "n4"]
    assert (by["n1"].tier, by["n2"].tier, by["n3"].tier, by["n4"].tier) == ("hot", "busy", "idle", "cold")
    assert by["n2"].jobs == ("5",)
    assert by["n1"].gate_passed_at == 1795510800.0               # the ready transition, not the hot one
    assert by["n3"].idle_since == 1795514400.0     # joined after its last job: idle since it joined
    assert by["n4"].state == "" and planning.calls[3][0] == "enrolled"   # never enrolled: full bring-up
    assert planning.calls[0][1] == ["IDLE", "DRAIN"] and planning.calls[1][1] is None


def test_consecutive_failures_reset_on_a_good_state():
    steps = [{"to_state": s} for s in ("failed", "recycling", "ready", "failed", "recycling", "failed")]
    assert supply.consecutive_failures(steps) == 2
