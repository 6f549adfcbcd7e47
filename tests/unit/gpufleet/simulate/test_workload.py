"""Demand levels -> jobs: gang jobs all at once, single-node jobs packed, last in first out."""
from gpufleet.simulate.workload import Workload


def test_gang_step_up_and_down():
    w = Workload(8, "gpu")
    _, new = w.update(0, 24, 0)
    assert [(j.gang, j.gpus, j.nodes) for j in new] == [(True, 24, 3)]
    assert w.jobs()[0].nodes == 3 and w.jobs()[0].pool == "gpu" and w.jobs()[0].state == "PENDING"
    _, new = w.update(60, 40, 0)
    assert [(j.gpus, j.nodes) for j in new] == [(16, 2)]            # the rise is a new 2-node gang
    w.stacks[True][0].started(60, ["n1", "n2", "n3"])
    released, _ = w.update(120, 8, 0)                              # newest first: the 16 go, then 16 of 24
    assert released == ["n2", "n3"] and w.stacks[True][0].gpus == 8 and w.stacks[True][0].nodes == 1
    assert [j.end for j in w.finished] == [120]


def test_single_node_demand_packs_into_nodes():
    w = Workload(8, "gpu")
    _, new = w.update(0, 0, 3)
    _, more = w.update(60, 0, 13)
    assert [j.gpus for j in new + more] == [8, 5]                   # the 3-GPU job filled its node first
    assert sum(j.nodes for j in w.stacks[False]) == 2                # ceil(13 / 8)
    w.update(120, 0, 7)
    assert [j.gpus for j in w.stacks[False]] == [7]


def test_pending_is_fifo():
    w = Workload(8, "gpu")
    w.update(0, 16, 0)
    w.update(60, 16, 8)
    assert [j.job_id for j in w.pending()] == ["gang-1", "job-2"]


def test_pending_gang_is_replaced_never_resized():
    w = Workload(8, "gpu")
    w.update(0, 32, 0)
    w.update(60, 16, 0)
    assert [j.job_id for j in w.finished] == ["gang-1"] and w.finished[0].end == 60
    (job,) = w.stacks[True]
    assert (job.job_id, job.gpus, job.nodes, job.submit) == ("gang-2", 16, 2, 60)
