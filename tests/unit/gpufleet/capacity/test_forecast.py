"""The forecast floor: weekly peaks at the same time of week, the quantile, the trend, nodes."""
import pytest

from gpufleet.capacity.floors import floors_at
from gpufleet.capacity.forecast import WEEK, forecast_nodes, quantile
from gpufleet.capacity.model import DemandSample

from tests.unit.gpufleet.capacity.fleet_factory import NOW, make_policy

FORECAST = {"enabled": True, "quantile": 0.5, "lookback_weeks": 4, "bucket_minutes": 15,
            "trend_weight": 0.0, "lead_time": "30m", "tier": "hot"}


def forecast_floor(pool, samples, now, joined):
    """-> (extra nodes to keep ready in ``pool.forecast.tier``, explanation dict): the forecast in
    nodes less those joined already."""
    nodes, why = forecast_nodes(pool, samples, now)
    if nodes is None:
        return 0, why
    floor = max(0, nodes - joined)
    return floor, dict(why, joined_nodes=joined, floor=floor)


def _pool(**forecast):
    return make_policy(gpus_per_node=8, forecast={**FORECAST, **forecast},
                       floors={"hot": 1, "warm": 2}, ceilings={"hot": 20}).pools["p"]


def _history(levels, recent=None, before=None):
    """Per past week k (1-based), a flat level from -15 m to +30 m around now - k weeks; and
    optionally the last 15 minutes before now at ``recent`` GPUs."""
    samples = []
    for week, gpus in enumerate(levels, start=1):
        base = NOW - week * WEEK
        for minute in range(-15, 30):
            value = before if (before is not None and minute < 0) else gpus
            samples.append(DemandSample("p", base + minute * 60, gpus_running=value))
    if recent is not None:
        samples += [DemandSample("p", NOW - m * 60, gpus_pending=recent) for m in range(15, 0, -1)]
    return sorted(samples, key=lambda s: s.minute)


@pytest.mark.parametrize("values,q,expected", [
    ([1, 2, 3, 4], 0.5, 2.5), ([1, 2, 3, 4], 1.0, 4), ([10], 0.9, 10),
    ([0, 10], 0.9, 9.0), ([4, 1, 3, 2], 0.25, 1.75),
])
def test_quantile(values, q, expected):
    assert quantile(values, q) == pytest.approx(expected)


def test_disabled_forecast_sets_nothing():
    pool = make_policy().pools["p"]
    assert forecast_floor(pool, _history([80]), NOW, 0) == (0, {"enabled": False})


def test_no_history_sets_nothing_and_says_so():
    floor, why = forecast_floor(_pool(), (), NOW, 0)
    assert floor == 0 and why["weeks_with_data"] == 0 and "no demand history" in why["why"]


def test_median_of_weekly_peaks_in_nodes_minus_joined():
    # weekly peaks 16, 24, 40, 64 GPUs: median 32 GPUs = 4 nodes of 8; 1 joined -> 3
    floor, why = forecast_floor(_pool(), _history([16, 24, 40, 64]), NOW, joined=1)
    assert why["weekly_peaks_gpus"] == [16, 24, 40, 64]
    assert why["quantile_gpus"] == 32.0
    assert (why["forecast_nodes"], floor) == (4, 3)


def test_high_quantile_and_partial_node_rounds_up():
    floor, why = forecast_floor(_pool(quantile=1.0), _history([16, 24, 40, 65]), NOW, joined=0)
    assert why["quantile_gpus"] == 65 and floor == 9


def test_trend_raises_the_forecast():
    # the same bucket in past weeks averaged 8 GPUs; the last 15 minutes 24: trend +16
    history = _history([16, 16, 16, 16], recent=24, before=8)
    floor, why = forecast_floor(_pool(trend_weight=0.5), history, NOW, joined=0)
    assert why["trend_gpus"] == 16.0
    assert why["forecast_gpus"] == 24.0 and floor == 3


def test_negative_trend_never_goes_below_zero():
    history = _history([8, 8, 8, 8], recent=0, before=400)
    floor, why = forecast_floor(_pool(trend_weight=1.0), history, NOW, joined=0)
    assert why["forecast_gpus"] == 0 and floor == 0


def test_missing_weeks_are_skipped():
    history = [s for s in _history([16, 24, 40, 64])
               if not NOW - 2.5 * WEEK < s.minute < NOW - 1.5 * WEEK]
    _, why = forecast_floor(_pool(), history, NOW, joined=0)
    assert why["weekly_peaks_gpus"] == [16, 40, 64]


def test_floors_explain_which_rule_won():
    pool = make_policy(gpus_per_node=8, forecast=FORECAST, floors={"hot": 1, "warm": 2},
                       ceilings={"hot": 3},
                       schedules=[{"name": "all-day", "start": "00:00", "end": "23:59",
                                   "floors": {"warm": 5}}]).pools["p"]
    floors, why = floors_at(pool, NOW, _history([40, 40, 40, 40]), joined=0)
    assert floors == {"hot": 3, "warm": 5}
    assert why["won"] == {"hot": "forecast (capped by ceiling 3)", "warm": "schedule:all-day"}
    assert why["capped_from"] == {"hot": 5}
    assert why["schedules"] == ["all-day"] and why["base"] == {"hot": 1, "warm": 2}


def test_history_from_ledger_rows():
    from gpufleet.capacity.forecast import history_from_rows
    rows = [{"pool": "p", "minute": 120, "gpus_running": 8, "gpus_pending": 2,
             "gpus_pending_capacity": 1, "recorded_at": 5.0},
            {"pool": "p", "minute": 60, "gpus_running": 4},
            {"pool": "q", "minute": 60, "gpus_pending": 16}]
    history = history_from_rows(rows)
    assert [s.minute for s in history["p"]] == [60.0, 120.0]
    assert history["p"][1] == DemandSample("p", 120.0, 8, 2, 1)
    assert history["p"][1].gpus == 10
    assert history["q"][0].gpus == 16


def test_a_gap_in_the_last_bucket_drops_the_trend_and_says_so():
    # the last bucket: 24 GPUs for 5 minutes then no sample for 10 (the controller was down);
    # read as data, its mean (the 5 samples) would set a trend; a gap leaves the trend out
    history = _history([16, 16, 16, 16], before=8)
    history += [DemandSample("p", NOW - m * 60, gpus_pending=0) for m in range(15, 10, -1)]
    floor, why = forecast_floor(_pool(trend_weight=1.0), sorted(history, key=lambda s: s.minute), NOW, joined=0)
    assert why["trend_gpus"] == 0.0 and why["forecast_gpus"] == 16.0 and floor == 2
    assert "no trend term" in why["gap_note"] and why["gaps"][-1]["to"] == NOW


def test_a_week_with_a_40_minute_gap_is_left_out_of_the_peaks():
    history = [s for s in _history([16, 24, 40, 64])
               if not (s.minute >= NOW - 3 * WEEK + 60 and s.minute < NOW - 3 * WEEK + 25 * 60)]
    _, why = forecast_floor(_pool(), history, NOW, joined=0)
    assert why["weekly_peaks_gpus"] == [16, 24, 64]
    assert "1 week(s) left out" in why["gap_note"]
    assert any(g["minutes"] == 25.0 for g in why["gaps"])


def test_short_holes_are_not_gaps():
    # one missing minute (a slow pass) is not a gap
    history = [s for s in _history([16, 24, 40, 64]) if s.minute != NOW - WEEK + 10 * 60]
    _, why = forecast_floor(_pool(), history, NOW, joined=0)
    assert why["weekly_peaks_gpus"] == [16, 24, 40, 64]
    # the only gap: no recent samples in this history (the last bucket)
    assert [g["to"] for g in why["gaps"]] == [NOW] and "0 week(s) left out" in why["gap_note"]
