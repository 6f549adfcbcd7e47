import pytest

from gpufleet.view.categories import slurm_category
from gpufleet.view.inputs import PoolSpec, Sample, Transition
from gpufleet.view.seam import seam
from tests.unit.gpufleet.view.history import H, T0, inputs

EXPECTED = {"busy": 16.0, "idle": 8.0, "slurm_down": 0.0, "unsampled": 0.0, "hot": 8.0, "warm": 12.0,
            "cold": 8.0, "provisioning": 14.0, "draining": 4.0, "failed": 2.0, "break_fix": 16.0,
            "not_enrolled": 32.0}


def test_owned_gpu_hours_split_exactly_by_category_and_layer():
    result = seam(inputs(), T0, T0 + 4 * H)
    pool = result["pools"]["h100"]
    assert pool["by_category"] == EXPECTED
    # 4 nodes x 4 h x 8 GPUs, minus n3's last hour after it was decommissioned.
    assert pool["owned_gpu_hours"] == 120.0
    assert pool["schedulable_gpu_hours"] == 24.0 and pool["busy_gpu_hours"] == 16.0
    assert pool["paid_not_schedulable_gpu_hours"] == 96.0
    assert pool["by_layer"] == {"L1": 50.0, "L2": 46.0, "L3": 8.0, "L4": 16.0}
    assert result["total"]["by_category"] == EXPECTED


def test_causes_are_ranked_by_hours_then_by_category_order():
    causes = seam(inputs(), T0, T0 + 4 * H)["pools"]["h100"]["causes"]
    assert [(c["category"], c["gpu_hours"]) for c in causes] == [
        ("not_enrolled", 32.0), ("break_fix", 16.0), ("provisioning", 14.0), ("warm", 12.0),
        ("hot", 8.0), ("cold", 8.0), ("draining", 4.0), ("failed", 2.0)]
    assert causes[0]["layer"] == "L1"


def test_series_buckets_add_up_and_split_at_bucket_edges():
    result = seam(inputs(), T0, T0 + 4 * H, buckets=4)
    series = result["series"]
    assert [b["start"] for b in series] == [T0, T0 + H, T0 + 2 * H, T0 + 3 * H]
    for category, hours in EXPECTED.items():
        assert sum(b["by_category"][category] for b in series) == pytest.approx(hours)
    # Hour 3 (+2 h .. +3 h): n1 idle 0.5 h then busy 0.5 h; n2 parked all hour.
    assert series[2]["by_category"]["idle"] == 4.0 and series[2]["by_category"]["busy"] == 4.0
    assert series[2]["by_category"]["warm"] == 8.0


def test_a_joined_node_without_samples_is_unsampled_until_the_first_one():
    pool = PoolSpec("a", "sku", 4, ("x",))
    history = (Transition("x", T0 - H, "joined"),)
    samples = (Sample("x", T0 + 0.5 * H, "IDLE+DRAIN"), Sample("x", T0 + 0.75 * H, "down"))
    result = seam(inputs(pools=(pool,), transitions=history, samples=samples), T0, T0 + H)
    assert result["pools"]["a"]["by_category"]["unsampled"] == 2.0
    assert result["pools"]["a"]["by_category"]["draining"] == 1.0
    assert result["pools"]["a"]["by_category"]["slurm_down"] == 1.0
    assert result["pools"]["a"]["causes"][0]["category"] == "unsampled"


@pytest.mark.parametrize("state, category", [
    ("IDLE", "idle"), ("idle+cloud", "idle"), (["IDLE", "CLOUD"], "idle"), ("MIXED+DRAIN", "busy"),
    ("IDLE+DRAIN", "draining"), ("idle*", "slurm_down"), ("DOWN", "slurm_down"), ("IDLE+POWERED_DOWN", "slurm_down"),
    ("", "unsampled"), (None, "unsampled"),
])
def test_slurm_states_of_a_joined_node(state, category):
    assert slurm_category(state) == category


def test_an_empty_period_is_refused_with_the_fix():
    with pytest.raises(ValueError, match="--until"):
        seam(inputs(), T0, T0)


def test_an_unknown_ledger_state_is_refused_not_guessed():
    history = (Transition("n1", T0, "teleporting"),)
    with pytest.raises(ValueError, match="categories.py"):
        seam(inputs(transitions=history), T0, T0 + H)
