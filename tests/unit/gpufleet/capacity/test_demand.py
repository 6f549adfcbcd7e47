"""Jobs to pools: partitions, features, GRES; unservable jobs with reasons."""
import pytest

from gpufleet.capacity.demand import map_jobs
from gpufleet.capacity.model import Demand, Job, Supply

from tests.unit.gpufleet.capacity.fleet_factory import make_policy, nodes

POLICY = make_policy(pools={
    "h100": {"match": {"partitions": ["train"], "features": ["h100"], "gres": ["gpu:h100"]}},
    "a100": {"match": {"partitions": ["train", "batch"], "features": ["a100"], "gres": ["gpu"]}},
    "infer": {"match": {"partitions": ["infer"]}, "gpus_per_node": 4},
})
SUPPLY = Supply(nodes("cold", 4, "h100") + nodes("cold", 2, "a100") + nodes("cold", 3, "infer"))


def _job(**fields):
    fields.setdefault("job_id", "1")
    fields.setdefault("nodes", 1)
    return Job(**fields)


@pytest.mark.parametrize("job,pool", [
    (_job(partition="train", features=("h100",)), "h100"),
    (_job(partition="train", features=("gpu:h100",)), "h100"),
    (_job(partition="train", features=("a100", "gpu")), "a100"),
    (_job(partition="batch"), "a100"),
    (_job(partition="train"), "h100"),                   # first matching pool in policy order
    (_job(partition="train", nodes=3), "h100"),
    (_job(partition="train", nodes=2, features=("gpu",)), "a100"),
    (_job(partition="infer", gpus_per_node=4), "infer"),
])
def test_job_goes_to_pool(job, pool):
    mapped = map_jobs(Demand((job,)), POLICY, SUPPLY)
    assert [j.pool for j in mapped.jobs] == [pool]
    assert mapped.unservable == ()


@pytest.mark.parametrize("job,words", [
    (_job(partition="debug"), "no pool matches partition 'debug'"),
    (_job(partition="train", features=("mi300",)), "no pool matches"),
    (_job(partition="train", features=("h100",), nodes=5), "needs 5 nodes; pool h100 has 4"),
    (_job(partition="batch", nodes=3), "needs 3 nodes; pool a100 has 2"),
    (_job(partition="infer", gpus_per_node=8), "asks for 8 GPUs per node; pool infer nodes have 4"),
    # lab: a requeued job bound to its replacement's reservation got a new gang elsewhere,
    # which re-bound it away from the reserved survivor and spare
    (_job(partition="train", nodes=2, state="PENDING", reservation="1@1795581700"),
     "bound to reservation 1@1795581700"),
])
def test_unservable_with_reason(job, words):
    mapped = map_jobs(Demand((job,)), POLICY, SUPPLY)
    assert mapped.jobs == ()
    (got, reason), = mapped.unservable
    assert got.job_id == job.job_id and got.pool is None
    assert words in reason


def test_too_big_for_first_pool_goes_to_the_next_that_fits():
    job = _job(partition="train", nodes=2, features=())
    supply = Supply(nodes("cold", 1, "h100") + nodes("cold", 2, "a100"))
    mapped = map_jobs(Demand((job,)), POLICY, supply)
    assert [j.pool for j in mapped.jobs] == ["a100"]


def test_decommissioned_members_do_not_count():
    supply = Supply(nodes("cold", 1, "a100") + nodes("unavailable", 1, "a100",
                                                     state="decommissioned"))
    mapped = map_jobs(Demand((_job(partition="batch", nodes=2),)), POLICY, supply)
    assert "pool a100 has 1" in mapped.unservable[0][1]


def test_pending_all_skips_jobs_capacity_cannot_start_and_sorts_oldest_first():
    jobs = (_job(job_id="b", partition="batch", submit_time=20, reason="Resources"),
            _job(job_id="a", partition="batch", submit_time=10, reason="Priority"),
            _job(job_id="c", partition="batch", submit_time=5, reason="Dependency"),
            _job(job_id="d", partition="batch", state="RUNNING"))
    mapped = map_jobs(Demand(jobs), POLICY, SUPPLY)
    assert [j.job_id for j in mapped.pending_all()] == ["a", "b"]
