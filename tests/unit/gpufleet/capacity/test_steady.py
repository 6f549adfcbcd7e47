"""The steady powered level: the peak demand of the hold window plus headroom in whole steps;
woken in one batch, parked only when the whole window fits a lower step, held still between."""
import pytest

from gpufleet.capacity.model import BUSY, HOT, IDLE, WARM, DemandSample
from gpufleet.capacity.policy import PolicyError, parse_policy
from gpufleet.capacity.steady import pool_nodes, steady_level

from tests.unit.gpufleet.capacity.fleet_factory import NOW, by_kind, job, make_policy, nodes, run

STEADY = {"enabled": True, "headroom": 2, "step": 4, "hold": "1h"}


def _policy(**steady):
    return make_policy(gpus_per_node=8, idle_time="15m", park_to="auto",
                       steady=dict(STEADY, **steady))


def _history(level, minutes=range(-120, 0)):
    """One sample a minute before NOW: ``level(minute)`` GPUs (or a constant)."""
    gpus = level if callable(level) else (lambda minute: level)
    return {"p": [DemandSample("p", NOW + m * 60, gpus_running=gpus(m)) for m in minutes]}


def _level(history, demand_nodes=0, members=64, powered=0, **steady):
    pool = _policy(**steady).pools["p"]
    return steady_level(pool, history["p"], NOW, demand_nodes, members, powered)


def test_the_level_is_the_window_peak_plus_headroom_in_whole_steps():
    # peak 41 GPUs 30 minutes ago = 6 nodes; + 2 headroom = 8; steps of 4: 8. Demand now 1 node.
    level, why = _level(_history(lambda m: 41 if m == -30 else 8), demand_nodes=1)
    assert (level, why["peak_nodes"], why["peak_gpus_recorded"]) == (8, 6, 41)
    # 7 nodes + 2 = 9 -> 12
    assert _level(_history(lambda m: 56 if m == -30 else 8))[0] == 12
    # steps of 1: exactly peak + headroom
    assert _level(_history(lambda m: 56 if m == -30 else 8), step=1)[0] == 9


def test_a_peak_older_than_the_hold_no_longer_counts():
    history = _history(lambda m: 80 if m == -90 else 8)     # 10 nodes 90 minutes ago, hold 1h
    assert _level(history)[0] == 4                          # 1 + 2 -> 4
    assert _level(history, hold="2h")[0] == 12              # 10 + 2 -> 12


def test_demand_now_above_the_history_raises_the_level_at_once():
    assert _level(_history(8), demand_nodes=9)[0] == 12


def test_the_level_is_capped_at_the_pool_and_disabled_is_none():
    assert _level(_history(400), members=20)[0] == 20
    pool = make_policy().pools["p"]
    assert steady_level(pool, (), NOW, 3, 10, 0) == (None, {"enabled": False})


def test_a_telemetry_gap_never_lets_the_level_fall():
    # samples only in the first and last 10 minutes of the hour: a 40-minute hole
    history = _history(8, minutes=list(range(-60, -50)) + list(range(-10, 0)))
    level, why = _level(history, powered=16)
    assert level == 16 and "gap" in why["gap_note"]
    # without the hole the same demand gives 4
    assert _level(_history(8), powered=16)[0] == 4


def test_nodes_below_the_level_are_woken_in_one_batch():
    # demand: 3 busy + 2 pending single-node jobs = 5 nodes; + 2 headroom = 7 -> level 8:
    # 2 wakes for the jobs and 3 more towards the level, all in this pass
    result = run(_policy(), nodes(BUSY, 3) + nodes(WARM, 10), [job(1), job(2)], history=_history(24))
    assert len(by_kind(result, "wake")) == 5
    assert result.notes["p"]["steady"]["level"] == 8


def test_idle_nodes_within_the_level_stay_joined_and_the_surplus_parks():
    # 2 busy, 8 idle for an hour, history at 2 nodes: level 4. Two idle nodes stay joined (not
    # held hot: jobs start on them at once), the other six park in this one pass.
    supply = nodes(BUSY, 2) + nodes(IDLE, 8, idle_since=NOW - 3600)
    result = run(_policy(), supply, history=_history(16))
    assert len(by_kind(result, "park")) == 6 and by_kind(result, "hold") == []
    assert len(result.notes["p"]["kept"]) == 2


def test_the_level_holds_while_demand_fell_within_the_hold():
    # demand was 7 nodes 40 minutes ago, 2 now: level 12 holds every idle node
    supply = nodes(BUSY, 2) + nodes(IDLE, 10, idle_since=NOW - 1800)
    result = run(_policy(), supply, history=_history(lambda m: 56 if m == -40 else 16))
    assert by_kind(result, "park") == [] and by_kind(result, "wake") == []


def test_hot_nodes_above_the_hot_floor_are_resumed_to_joined():
    supply = nodes(BUSY, 2) + nodes(HOT, 3, since=NOW - 3600)
    result = run(_policy(), supply, history=_history(16))
    # level 4, 5 powered: the hot nodes above the hot floor 0 all join (no wake); the one above
    # the level parks once idle for the idle time, as the idle-node test shows
    assert [a.nodes for a in by_kind(result, "resume")] == [("p-hot-00",), ("p-hot-01",), ("p-hot-02",)]
    assert by_kind(result, "park") == [] and by_kind(result, "wake") == []
    floor = make_policy(gpus_per_node=8, floors={"hot": 3}, steady=STEADY)
    assert by_kind(run(floor, supply, history=_history(16)), "resume") == []


def test_without_steady_idle_nodes_park_as_before():
    supply = nodes(BUSY, 2) + nodes(IDLE, 8, idle_since=NOW - 3600)
    result = run(make_policy(gpus_per_node=8, idle_time="15m", park_to="warm"), supply, history=_history(16))
    assert len(by_kind(result, "park")) == 8 and "steady" not in result.notes["p"]


POOL = """pools:
  p:
    sku: x
    members: {patterns: ["p-*"]}
    steady: {%s}
"""


@pytest.mark.parametrize("body, field, words", [
    ("enabled: true, hold: 30s", "pools.p.steady.hold", "outside 1m to 7d"),
    ("enabled: true, hold: 8d", "pools.p.steady.hold", "outside 1m to 7d"),
    ("enabled: true, hold: 6", "pools.p.steady.hold", "with a unit"),
    ("enabled: true, step: 0", "pools.p.steady.step", "1"),
    ("enabled: true, headroom: -1", "pools.p.steady.headroom", "0"),
    ("enabled: true, headroom: '4'", "pools.p.steady.headroom", ""),
    ("enabled: yes-please", "pools.p.steady.enabled", ""),
    ("enabled: true, hedroom: 4", "pools.p.steady.hedroom", "unknown key"),
])
def test_bad_steady_settings_are_refused_naming_the_field(body, field, words):
    with pytest.raises(PolicyError) as err:
        parse_policy(POOL % body)
    text = str(err.value)
    assert field in text and words in text and "fix:" in text


def test_steady_defaults():
    steady = parse_policy(POOL % "enabled: true").pools["p"].steady
    assert (steady.headroom, steady.step, steady.hold) == (4, 4, 21600.0)


# headroom and step as a percent of the pool's nodes: resolved against the pool, rounded up


@pytest.mark.parametrize("body, headroom, step", [
    ("headroom: 10%, step: 12.5%", "10%", "12.5%"),
    ("headroom: '10 %', step: ' 25%'", "10%", "25%"),
    ("headroom: 0%, step: 100%", "0%", "100%"),
    ("headroom: 6, step: 8", 6, 8),                      # node counts, as before
    ("headroom: 0, step: 12.5%", 0, "12.5%"),
])
def test_headroom_and_step_are_a_node_count_or_a_percent_of_the_pool(body, headroom, step):
    steady = parse_policy(POOL % ("enabled: true, " + body)).pools["p"].steady
    assert (steady.headroom, steady.step) == (headroom, step)


@pytest.mark.parametrize("body, line", [
    ("step: 0%", "pools.p.steady.step: a step of 0% of the pool is not above 0 and at most 100 percent; fix: "
                 "write a node count like 8 or a percent of the pool like '12.5%'"),
    ("step: 150%", "pools.p.steady.step: a step of 150% of the pool is not above 0 and at most 100 percent"),
    ("headroom: 101%", "pools.p.steady.headroom: a headroom of 101% of the pool is not from 0 to 100 percent; "
                       "fix: write a node count like 6 or a percent of the pool like '10%'"),
    ("headroom: -1", "pools.p.steady.headroom: a headroom of -1 nodes is outside 0 to 100000; fix:"),
    ("step: 0", "pools.p.steady.step: a step of 0 nodes is outside 1 to 100000; fix:"),
    ("step: 100001", "pools.p.steady.step: a step of 100001 nodes is outside 1 to 100000; fix:"),
    ("headroom: '4'", "pools.p.steady.headroom: '4' is not a headroom; fix: write a node count like 6 or a "
                      "percent of the pool like '10%' (a count without quotes, a percent with %)"),
    ("headroom: ten%", "pools.p.steady.headroom: 'ten%' is not a headroom; fix:"),
    ("headroom: -5%", "pools.p.steady.headroom: '-5%' is not a headroom; fix:"),
    ("step: 6.5", "pools.p.steady.step: 6.5 is not a step; fix: write a node count like 8 or a percent"),
    ("step: true", "pools.p.steady.step: True is not a step; fix:"),
    ("step: [8]", "pools.p.steady.step: [8] is not a step; fix:"),
])
def test_a_bad_share_is_refused_with_its_field_path_and_the_fix(body, line):
    with pytest.raises(PolicyError) as err:
        parse_policy(POOL % ("enabled: true, " + body))
    assert len(err.value.problems) == 1 and err.value.problems[0].startswith(line)


@pytest.mark.parametrize("value, members, least, expected", [
    (6, 512, 0, 6), ("10%", 64, 0, 7), ("10%", 60, 0, 6), ("10%", 512, 0, 52), ("12.5%", 64, 1, 8),
    ("12.5%", 20, 1, 3), ("12.5%", 4, 1, 1), ("1%", 10, 1, 1), ("0%", 64, 0, 0), ("5%", 0, 1, 1),
    ("100%", 33, 1, 33),
])
def test_a_percent_is_resolved_against_the_pool_rounded_up(value, members, least, expected):
    assert pool_nodes(value, members, least=least) == expected


def test_the_level_uses_the_shares_of_this_pool():
    # peak 41 GPUs = 6 nodes. 64 members: headroom 10% = 7, step 12.5% = 8: 13 -> 16.
    history = _history(lambda m: 41 if m == -30 else 8)
    level, why = _level(history, members=64, headroom="10%", step="12.5%")
    assert (level, why["headroom"], why["step"]) == (16, 7, 8)
    assert (why["headroom_set"], why["step_set"], why["pool_nodes"]) == ("10%", "12.5%", 64)
    # the same shares of 512 members: headroom 52, step 64: 58 -> 64
    assert _level(history, members=512, headroom="10%", step="12.5%")[0] == 64
    # of 10 members: headroom 1, step 2: 7 -> 8
    assert _level(history, members=10, headroom="10%", step="12.5%")[0] == 8
    # node counts give the same level on every pool, and no share keys
    level, why = _level(history, members=512, headroom=2, step=4)
    assert level == 8 and "headroom_set" not in why and "pool_nodes" not in why


def test_the_planner_wakes_to_a_level_taken_from_the_pool_size():
    # 3 busy + 17 warm = 20 nodes; demand 3 busy + 2 pending = 5 nodes; headroom 10% of 20 = 2,
    # step 25% of 20 = 5: 7 -> level 10: 2 wakes for the jobs and 5 more, in this pass
    policy = _policy(headroom="10%", step="25%")
    result = run(policy, nodes(BUSY, 3) + nodes(WARM, 17), [job(1), job(2)], history=_history(24))
    assert result.notes["p"]["steady"]["level"] == 10
    assert len(by_kind(result, "wake")) == 7
    # the same shares on a pool of 40: headroom 4, step 10: 9 -> 10 as well, but a pool of 80
    # (headroom 8, step 20): 13 -> 20
    result = run(policy, nodes(BUSY, 3) + nodes(WARM, 77), [job(1), job(2)], history=_history(24))
    assert result.notes["p"]["steady"]["level"] == 20
    assert len(by_kind(result, "wake")) == 17


def test_the_shipped_default_policy_sizes_its_level_by_the_pool():
    from gpufleet.capacity.policy import load_policy
    from gpufleet.commands.simulate import DEFAULT_POLICY
    steady = load_policy(DEFAULT_POLICY).pools["gpu"].steady
    assert (steady.headroom, steady.step, steady.hold) == ("15%", "12.5%", 21600.0)
    sizes = {n: (pool_nodes(steady.headroom, n), pool_nodes(steady.step, n, least=1)) for n in (26, 32, 64, 512)}
    assert sizes == {26: (4, 4), 32: (5, 4), 64: (10, 8), 512: (77, 64)}
