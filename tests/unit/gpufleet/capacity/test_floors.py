"""Forecast floors that do not thrash: one count of supply per pass, nodes the forecast wants
back are not parked, a raised floor holds for its minimum on-time; no forecast: as before."""
from gpufleet.capacity.forecast import WEEK
from gpufleet.capacity.model import BUSY, HOT, IDLE, WARM, DemandSample
from gpufleet.capacity.policy import load_policy

from tests.unit.gpufleet.capacity.fleet_factory import NOW, by_kind, job, kinds, make_policy, nodes, run

FORECAST = {"enabled": True, "quantile": 1.0, "lookback_weeks": 2, "lead_time": "30m", "trend_weight": 0.0}


def _history(gpus, minutes=range(-60, 60)):
    """Every past week: ``gpus`` (or gpus(minute)) each minute around the same time of week."""
    level = gpus if callable(gpus) else (lambda minute: gpus)
    return {"p": [DemandSample("p", NOW - week * WEEK + m * 60, gpus_running=level(m))
                  for week in (2, 1) for m in minutes]}


def _policy(**pool):
    pool.setdefault("forecast", FORECAST)
    return make_policy(gpus_per_node=8, idle_time="15m", **pool)


def _long_idle(count, start=0):
    return nodes(IDLE, count, start=start, idle_since=NOW - 3600)


def test_parked_idle_nodes_are_not_woken_again_next_pass():
    # the forecast wants 6 nodes; 3 busy, 3 idle for an hour. Counting the idle nodes as joined
    # while parking them (the old way) parked 3 and woke 3 the next pass; now they are held hot.
    policy = _policy(park_to="auto")
    history = _history(48)
    supply = nodes(BUSY, 3) + _long_idle(3) + nodes(WARM, 4)
    first = run(policy, supply, history=history)
    assert by_kind(first, "park") == [] and by_kind(first, "wake") == []
    assert [a.nodes for a in by_kind(first, "hold")] == [("p-idle-00",), ("p-idle-01",), ("p-idle-02",)]
    held = nodes(BUSY, 3) + nodes(HOT, 3, since=NOW - 3600) + nodes(WARM, 4)
    second = run(policy, held, history=history, now=NOW + 10)
    assert kinds(second) == []
    assert second.notes["p"]["floors"]["floors"]["hot"] == 3


def test_wakes_for_pending_jobs_are_netted_out():
    # the forecast wants 4 nodes ready; 2 pending jobs wake 2 nodes: the floor asks for 2 more,
    # not 4 (the old count woke 6 for a forecast of 4)
    result = run(_policy(), nodes(WARM, 8), [job(1), job(2)], history=_history(32))
    assert len(by_kind(result, "wake")) == 4
    committed = result.notes["p"]["floors"]["forecast"]["committed"]
    assert committed["for_pending_jobs"] == 2


def test_park_to_warm_keeps_a_node_the_forecast_wants_back():
    result = run(_policy(park_to="warm"), nodes(BUSY, 3) + _long_idle(3), history=_history(40))
    # 5 wanted: 3 busy + 2 idle kept, the third parks
    assert [a.nodes for a in by_kind(result, "park")] == [("p-idle-00",)]
    assert len(result.notes["p"]["kept"]) == 2 and "within its wake" in result.notes["p"]["kept"][0]


def test_a_raised_floor_holds_for_the_minimum_on_time():
    # 15 minutes ago the forecast looked at 64 GPUs ahead (8 nodes); now at 8 GPUs (1 node)
    from gpufleet.capacity.floors import PoolFloors
    history = _history(lambda minute: 64 if -15 <= minute < 0 else 8)["p"]
    held = PoolFloors(_policy().pools["p"], NOW, history, hold=True)
    assert held["hot"] == 8 and held.why()["forecast"]["held"]["nodes_now"] == 1
    pool = _policy(forecast=dict(FORECAST, min_on_time="0s")).pools["p"]
    assert PoolFloors(pool, NOW, history, hold=True)["hot"] == 1


def test_floor_falls_when_the_forecast_falls():
    from gpufleet.capacity.floors import PoolFloors
    history = _history(lambda minute: 64 if -60 <= minute < -30 else 8)["p"]
    assert PoolFloors(_policy().pools["p"], NOW, history, hold=True)["hot"] == 1


def test_min_on_time_is_validated():
    import pytest
    from gpufleet.capacity.policy import PolicyError
    with pytest.raises((PolicyError, ValueError)) as err:
        make_policy(forecast=dict(FORECAST, min_on_time="2d"))
    assert "min_on_time" in str(err.value)


def test_without_forecast_idle_nodes_park_as_before():
    # the lab policy: forecast off, idle_time 90s, park_to warm, hot floor 2
    policy = load_policy("lab/config/capacity.yml")
    idle = nodes(IDLE, 3, pool="lab", idle_since=NOW - 100)
    warm = nodes(WARM, 2, pool="lab")
    result = run(policy, idle + warm, jobs=(), now=NOW)
    assert [a.nodes[0] for a in by_kind(result, "park")] == ["lab-idle-00", "lab-idle-01", "lab-idle-02"]
    # the fleet's concurrency limit (4) leaves room for one wake towards the hot floor this pass
    assert [a.nodes[0] for a in by_kind(result, "wake")] == ["lab-warm-00"]
    assert result.notes["lab"]["floors"]["forecast"] == {"enabled": False}


def test_a_forecast_floor_with_gaps_says_so_in_its_reason():
    # one past week misses its look-ahead window (no sample for 25 minutes): left out, and said
    history = [s for s in _history(16)["p"] if not NOW - WEEK <= s.minute < NOW - WEEK + 25 * 60]
    result = run(_policy(), nodes(WARM, 4), history={"p": history})
    assert len(by_kind(result, "wake")) == 2
    assert "1 week(s) left out" in by_kind(result, "wake")[0].reason
    assert result.notes["p"]["floors"]["forecast"]["gaps"]
