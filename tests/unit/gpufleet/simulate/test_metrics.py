"""Hand-made traces with known answers, through the real planner: a step, a spike, a daily
cycle, a gang. Every expected number is derived in the comments from the fixed latencies
(hot 5 s, warm 120 s, cold 600 s), the 10 s controller tick and the policy; none is copied
from a run.
"""
import pytest

from gpufleet.simulate.engine import Simulation
from gpufleet.simulate.metrics import count_changes, weighted_percentile
from tests.unit.gpufleet.simulate.conftest import policy, trace

REACTIVE = "    idle_time: 1h\n    park_to: warm\n"


def _run(tr, body, latency, nodes=4, initial="warm"):
    sim = Simulation(tr, policy(body), latency, "gpu", nodes, 8, interval=10.0, initial_tier=initial)
    return sim, sim.run()


def test_step_reactive(fixed):
    # 8 GPUs from minute 1 on, 4 warm nodes, no floors. 60: the job waits, the planner wakes
    # gpu-1; 180: hot; the 190 tick resumes it; 195: joined, the job starts. Wait 135 s.
    sim, m = _run(trace([0, 8, 8, 8, 8, 8, 8]), REACTIVE, fixed())
    assert m["shortfall_gpu_minutes"] == pytest.approx(8 * 135 / 60, abs=1e-3)
    assert m["shortfall_episodes"] == 1
    assert m["added_wait_p50_s"] == m["added_wait_p95_s"] == 135.0
    assert m["idle_powered_gpu_hours"] == {"idle": 0.0, "hot": round(8 * 15 / 3600, 3),       # 180-195
                                           "provisioning": round(8 * 120 / 3600, 3)}          # 60-180
    assert m["powered_off_node_hours"] == pytest.approx((3 * 420 + 60) / 3600, abs=1e-3)      # end: 420 s
    assert m["busy_gpu_hours"] == pytest.approx(8 * (420 - 195) / 3600, abs=1e-3)
    assert (m["power_offs"], m["partial_starts"], m["refused_actions"]) == (0, 0, {})
    assert m["actions"] == {"wake": 1, "resume": 1}


def test_spike_with_a_hot_floor(fixed):
    # Hot floor 1: gpu-1 woken at 0, hot at 120. The 8-GPU spike at 180 resumes it (starts at
    # 185, wait 5 s) and gpu-2 is woken to refill the floor (hot at 300). The spike ends at 240.
    # gpu-1: prov 0-120, hot 120-185, busy 185-240, idle 240-420; gpu-2: warm 0-180, prov
    # 180-300, hot 300-420; gpu-3, gpu-4 warm throughout.
    sim, m = _run(trace([0, 0, 0, 8, 0, 0, 0]), "    floors: {hot: 1}\n" + REACTIVE, fixed())
    assert m["shortfall_gpu_minutes"] == pytest.approx(8 * 5 / 60, abs=1e-3)
    assert (m["shortfall_episodes"], m["added_wait_p50_s"], m["added_wait_p95_s"]) == (1, 5.0, 5.0)
    assert m["idle_powered_gpu_hours"] == {"idle": round(8 * 180 / 3600, 3), "hot": round(8 * (65 + 120) / 3600, 3),
                                           "provisioning": round(8 * 240 / 3600, 3)}
    assert m["powered_off_node_hours"] == pytest.approx((180 + 2 * 420) / 3600, abs=1e-3)
    assert m["busy_gpu_hours"] == pytest.approx(8 * 55 / 3600, abs=1e-3)
    assert (m["power_offs"], m["partial_starts"]) == (0, 0)


DAILY = """    idle_time: 30m
    park_to: auto
    schedules:
      - {name: day, start: "08:00", end: "18:00", floors: {hot: 2}}
"""


def test_daily_cycle_with_a_scheduled_buffer(fixed):
    # Two days from Monday 2026-01-05 00:00 UTC; 16 GPUs (two one-node jobs) 09:00-17:00.
    # Each day: 08:00 the window's hot floor 2 wakes gpu-1, gpu-2 (hot 08:02); 09:00 both are
    # resumed (jobs start 09:00:05, 5 s wait) and gpu-3, gpu-4 are woken to refill the floor
    # (hot 09:02); 17:00 the jobs end; 17:30 (idle time) gpu-1, gpu-2 are parked (the floor is
    # met); 18:00 the window closes and gpu-3, gpu-4 (hot longer than the idle time) are parked.
    start = 1767571200.0
    small = [16 if 9 <= (i % 1440) // 60 < 17 else 0 for i in range(2880)]
    sim, m = _run(trace(small, start=start), DAILY, fixed())
    assert m["shortfall_gpu_minutes"] == pytest.approx(2 * 16 * 5 / 60, abs=1e-3)
    assert (m["shortfall_episodes"], m["added_wait_p50_s"], m["added_wait_p95_s"]) == (2, 5.0, 5.0)
    hot_s = 2 * (3600 - 120 + 5) + 2 * (9 * 3600 - 120)          # 08:02-09:00:05 and 09:02-18:00
    assert m["idle_powered_gpu_hours"] == {"idle": round(2 * 2 * 1800 * 8 / 3600, 3),
                                           "hot": round(2 * hot_s * 8 / 3600, 3),
                                           "provisioning": round(2 * 4 * 120 * 8 / 3600, 3)}
    assert m["busy_gpu_hours"] == pytest.approx(2 * 2 * (8 * 3600 - 5) * 8 / 3600, abs=1e-3)
    powered_node_h = (m["busy_gpu_hours"] + sum(m["idle_powered_gpu_hours"].values())) / 8
    assert m["powered_off_node_hours"] == pytest.approx(4 * 48 - powered_node_h, abs=1e-2)
    assert m["power_offs"] == 8 and m["power_cycles_per_node_day"] == pytest.approx(8 / 4 / 2)
    assert m["partial_starts"] == 0 and m["refused_actions"] == {}


def test_gang_starts_all_at_once(fixed):
    # A 16-GPU gang (2 nodes) from minute 1: the planner reserves gpu-1, gpu-2 and wakes both
    # (hot at 180); the 190 tick admits them; all ranks start together at 195.
    sim, m = _run(trace([0] * 6, gang=[0, 16, 16, 16, 16, 16]), REACTIVE, fixed())
    job = sim.workload.find("gang-1")
    assert job.start == 195.0 and len(job.assigned) == 2
    assert {sim.fleet.by_name[n].since for n in job.assigned} == {195.0}
    assert m["shortfall_gpu_minutes"] == pytest.approx(16 * 135 / 60, abs=1e-3)
    assert m["partial_starts"] == 0 and m["refused_actions"] == {}
    assert m["actions"] == {"reserve": 1, "wake": 2, "admit": 1}


def test_over_capacity_is_not_shortfall(fixed):
    # 40 GPUs (5 one-node jobs) on a 4-node pool: 4 run from the start; the 5th can never
    # start: it is over capacity for the whole 6 minutes, not shortfall.
    sim, m = _run(trace([40] * 6), REACTIVE, fixed(), initial="hot")
    assert m["over_capacity_gpu_minutes"] == pytest.approx(8 * 6, abs=1e-3)


@pytest.mark.parametrize("pairs, q, expected", [
    ([(10, 1), (20, 1), (30, 1), (40, 1)], 0.5, 20), ([(10, 1), (20, 3)], 0.5, 20),
    ([(10, 8), (90, 1)], 0.95, 90), ([], 0.5, None),
])
def test_weighted_percentile(pairs, q, expected):
    assert weighted_percentile(pairs, q) == expected


def test_tradeoff_smallest_value_per_target():
    from gpufleet.simulate.compare import tradeoff

    def point(value, shortfall, idle):
        return {"value": value, "metrics": {"shortfall_gpu_minutes": shortfall,
                                            "idle_powered_gpu_hours": {"idle": idle, "hot": 0.0, "provisioning": 0.0}}}

    sweep = {"field": "f", "points": [point(4, 40.0, 30.0), point(0, 100.0, 10.0), point(8, 10.0, 50.0)]}
    rows = tradeoff(sweep, [100.0, 50.0, 10.0, 5.0])
    assert [(r["target"], r["value"], r["idle_cost"]) for r in rows] == [
        (100.0, 0, 10.0), (50.0, 4, 30.0), (10.0, 8, 50.0), (5.0, None, None)]
    defaults = tradeoff(sweep)                  # fractions of the smallest value's shortfall
    assert defaults[0]["target"] == 100.0 and defaults[0]["value"] == 0


def test_step_reactive_node_figures_and_intervals(fixed):
    # test_step_reactive's run (420 s, one 10-minute interval, closed at the end): the job waits
    # 135 s for one node; gpu-1 warm 0-60, gpu-2..4 warm all along: 3 * 420 + 60 = 1,320
    # powered-off node-seconds; one power-on (the wake at 60); powered and idle: provisioning
    # 60-180 and hot 180-195 (135 s); busy 195-420 (225 s).
    sim, m = _run(trace([0, 8, 8, 8, 8, 8, 8]), REACTIVE, fixed())
    assert m["shortfall_node_minutes"] == pytest.approx(135 / 60, abs=1e-3)
    assert (m["shortfall_node_intervals"], m["shortfall_intervals"]) == (1, 1)
    assert m["powered_off_nodes_mean"] == pytest.approx(1320 / 420, abs=1e-3)
    assert m["power_changes_per_day"] == pytest.approx(1 / (420 / 86400), abs=1e-3)
    assert m["idle_powered_node_hours"] == pytest.approx(135 / 3600, abs=1e-3)
    assert m["powered_used_rate"] == pytest.approx(225 / 360, abs=1e-4)
    assert m["wakes_within_60s_of_park"] == 0
    assert sim.metrics.intervals["start"] == [0.0]
    assert sim.metrics.intervals["nodes_short_peak"] == [1]
    assert sim.metrics.intervals["power_changes"] == [1]


def test_intervals_split_at_ten_minutes_and_a_quick_wake_is_thrash(fixed):
    # Scripted: park hot gpu-1 at 0, wake it at 60 (within 60 s of its park: thrash), and the
    # 16-GPU gang demand from 660 waits until the end (720) in the second interval.
    from gpufleet.capacity.model import Action, Plan
    script = {0.0: [Action("park", "gpu", ("gpu-1",), "t")], 60.0: [Action("wake", "gpu", ("gpu-1",), "t")]}
    plan = lambda demand, supply, pol, now, history=None: Plan(tuple(script.get(now, ())))  # noqa: E731
    tr = trace([0] * 12, gang=[0] * 11 + [16])
    sim = Simulation(tr, None, fixed(), "gpu", 2, 8, interval=10.0, initial_tier="hot", plan=plan)
    m = sim.run()
    assert m["wakes_within_60s_of_park"] == 1 and (m["power_offs"], m["power_ons"]) == (1, 1)
    assert sim.metrics.intervals["start"] == [0.0, 600.0]
    assert sim.metrics.intervals["power_changes"] == [2, 0]
    # gpu-1 off 0-60 in the first interval: 60 node-seconds / 600 s
    assert sim.metrics.intervals["powered_off_nodes_mean"] == [0.1, 0.0]
    # 660-720: two nodes short for 60 s
    assert sim.metrics.intervals["nodes_short_peak"] == [0, 2]
    assert sim.metrics.intervals["shortfall_node_minutes"] == [0.0, 2.0]
    assert (m["shortfall_node_intervals"], m["shortfall_intervals"]) == (2, 1)
    # the park and the wake fall in one interval: both nodes powered at each interval's end
    # (gpu-1 provisioning, then hot), so the powered count never changes
    assert sim.metrics.intervals["powered_nodes"] == [2, 2]
    assert m["powered_count_change_intervals"] == 0 and m["powered_count_change_intervals_per_day"] == 0


@pytest.mark.parametrize("powered, expected", [
    ([], 0), ([5], 0), ([5, 5, 5], 0),
    ([3, 3, 4, 4, 2, 2, 2, 5], 3),      # changes into the 3rd, 5th and 8th intervals
    ([0, 1, 0, 1], 3),                  # every flip counts, whichever way
])
def test_count_changes(powered, expected):
    assert count_changes(powered) == expected


def test_daily_cycle_powered_count_changes(fixed):
    # test_daily_cycle_with_a_scheduled_buffer's run: per day the powered count (joined + on
    # its way) goes 0 -> 2 at 08:00, 2 -> 4 at 09:00, 4 -> 2 at 17:30, 2 -> 0 at 18:00, each in
    # its own 10-minute interval: 4 intervals with a change a day, 8 in the 2 days. Off: the
    # powered-off node-hours over 4 nodes x 48 h.
    small = [16 if 9 <= (i % 1440) // 60 < 17 else 0 for i in range(2880)]
    sim, m = _run(trace(small, start=1767571200.0), DAILY, fixed())
    powered = sim.metrics.intervals["powered_nodes"]
    assert len(powered) == 288 and max(powered) == 4 and powered[0] == powered[-1] == 0
    assert m["powered_count_change_intervals"] == 8
    assert m["powered_count_change_intervals_per_day"] == pytest.approx(4.0)
    assert m["powered_off_fraction"] == pytest.approx(m["powered_off_node_hours"] / (4 * 48), abs=1e-4)
