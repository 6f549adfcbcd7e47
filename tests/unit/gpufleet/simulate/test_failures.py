"""Node failures in the simulator: seeded, replace-then-repair from hot spares, the spare sweep."""
import pytest

from gpufleet.simulate import failures
from gpufleet.simulate.errors import SimulateError

from .conftest import trace

# 20 busy 8-GPU nodes for 2 days; a per-GPU MTBF of 400 h makes a node fail every 50 h: ~19 failures
BUSY = trace([0] * 2880, gang=[160] * 2880)
MODEL = dict(mtbf_gpu_hours=400.0, repair_s=600.0)


def run(fixed, spares, seed=1, **over):
    model = failures.FailureModel(seed=seed, **dict(MODEL, **over))
    return failures.simulate_failures(BUSY, 8, fixed(), model, spares)


def test_failures_are_reproducible_with_a_seed(fixed):
    first, again = run(fixed, 1), run(fixed, 1)
    assert first == again
    assert first["failures"] > 5
    times = failures.draw(failures.exposure(BUSY, 8), 8, failures.FailureModel(seed=1, **MODEL))
    assert times != failures.draw(failures.exposure(BUSY, 8), 8, failures.FailureModel(seed=2, **MODEL))


def test_failure_count_follows_the_mtbf(fixed):
    # 20 nodes x 48 h / (400 h / 8) = 19.2 expected; over seeds the mean lands near it
    counts = [run(fixed, 0, seed=s)["failures"] for s in range(30)]
    assert 15 < sum(counts) / len(counts) < 24


def test_zero_spares_wait_for_the_repair(fixed):
    none, some = run(fixed, 0), run(fixed, 2)
    # fixed hot latency 5 s: with a spare free a replacement is the resume; without, the repair first
    assert none["replacement_s"]["p50"] >= 600.0 + 5.0
    assert some["replacement_s"]["p50"] == 5.0
    assert none["replacement_s"]["max"] > some["replacement_s"]["max"]
    assert none["goodput"] < some["goodput"] < 1.0
    # a gang of 160 GPUs stalls whole while its member is replaced
    assert none["gpu_hours_stalled"] == pytest.approx(
        160 * sum(failures.replacements(
            failures.draw(failures.exposure(BUSY, 8), 8, failures.FailureModel(seed=1, **MODEL)),
            0, 600.0, [5.0] * none["failures"])) / 3600.0, abs=0.01)


def test_replacements_queue_on_repaired_nodes():
    # two failures 10 s apart, one spare, repair 100 s: the second waits for the first's repair
    got = failures.replacements([(0.0, 8), (10.0, 8)], 1, 100.0, [5.0, 5.0])
    assert got == [5.0, 100.0 - 10.0 + 5.0]


def test_sweep_returns_the_smallest_pool_meeting_the_target(fixed):
    model = failures.FailureModel(seed=3, mtbf_gpu_hours=40.0, repair_s=3600.0)
    smallest, tried = failures.spare_sweep(BUSY, 8, fixed(), model, target_s=90.0)
    assert smallest is not None and smallest >= 2
    assert [n for n, _ in tried] == list(range(smallest + 1))
    assert tried[-1][1] <= 90.0 and all(slowest > 90.0 for _, slowest in tried[:-1])
    assert run(fixed, smallest, seed=3, mtbf_gpu_hours=40.0, repair_s=3600.0)["replacement_s"]["max"] <= 90.0
    assert run(fixed, smallest - 1, seed=3, mtbf_gpu_hours=40.0, repair_s=3600.0)["replacement_s"]["max"] > 90.0


def test_sweep_says_when_no_pool_in_range_meets_it(fixed):
    model = failures.FailureModel(seed=1, **MODEL)
    assert failures.spare_sweep(BUSY, 8, fixed(hot={"dist": "fixed", "seconds": 120}), model, max_spares=3)[0] is None


@pytest.mark.parametrize("over, flag", [({"mtbf_gpu_hours": 0}, "--mtbf-gpu-hours"),
                                        ({"mtbf_gpu_hours": float("nan")}, "--mtbf-gpu-hours"),
                                        ({"repair_s": -1}, "--repair")])
def test_bad_settings_are_named(over, flag):
    with pytest.raises(SimulateError, match=flag):
        failures.FailureModel(**over)
