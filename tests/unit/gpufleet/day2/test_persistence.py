"""Persistence: act only on signals that repeat or last; flapping nodes are never actioned."""
from gpufleet.capacity.policy import Persistence
from gpufleet.day2.model import Signal
from gpufleet.day2.persistence import observe

T0 = 1_800_000_000.0


def _sig(node="n1", kind="slurm_down", t=T0, source="slurm"):
    return Signal(node, source, kind, "r", t)


def _run(pattern, rule, step=60.0, node="n1"):
    """pattern: one bool per pass (signal present?) -> list of actionable node sets."""
    state, out = None, []
    for i, present in enumerate(pattern):
        now = T0 + i * step
        state, act = observe(state, [_sig(node, t=now)] if present else [], now, rule)
        out.append({a.node for a in act})
    return out, state


def test_repeats_within_window_act_on_the_count():
    out, _ = _run([1, 1, 1], Persistence(count=3, window="600s"))
    assert out == [set(), set(), {"n1"}]


def test_flapping_node_never_actioned():
    # Seen once every 10 minutes, window 10 minutes, count 2: never twice in one window.
    rule = Persistence(count=2, window="600s")
    out, state = _run([1] + [0] * 9 + [1] + [0] * 9 + [1] + [0] * 9 + [1], rule)
    assert all(not acted for acted in out)
    # and with a duration rule, a signal that never lasts does not act either
    out, _ = _run([1, 0] * 20, Persistence(count=100, window="600s", duration="120s"))
    assert all(not acted for acted in out)


def test_duration_rule_needs_an_unbroken_run():
    rule = Persistence(count=100, window="3600s", duration="180s")
    out, _ = _run([1, 1, 1, 1], rule)
    assert out == [set(), set(), set(), {"n1"}]
    out, _ = _run([1, 1, 0, 1, 1, 1], rule)
    assert out == [set()] * 5 + [set()]   # the break restarts the clock: 120s at the end
    out, _ = _run([1, 1, 0, 1, 1, 1, 1], rule)
    assert out[-1] == {"n1"}


def test_a_cleared_signal_is_not_actionable_and_is_forgotten():
    rule = Persistence(count=2, window="120s")
    state, act = observe(None, [_sig()], T0, rule)
    state, act = observe(state, [_sig(t=T0 + 60)], T0 + 60, rule)
    assert [a.node for a in act] == ["n1"]
    state, act = observe(state, [], T0 + 120, rule)
    assert act == ()
    state, act = observe(state, [], T0 + 400, rule)
    assert state == {}


def test_most_severe_reason_first_and_earliest_first_seen():
    rule = Persistence(count=1, window="60s")
    sigs = [_sig(kind="slurm_drain", t=T0 - 500),
            _sig(kind="power_off", source="redfish", t=T0)]
    _, act = observe(None, sigs, T0, rule)
    assert len(act) == 1
    assert act[0].severity == 0 and act[0].first_seen == T0 - 500
    assert act[0].reasons[0].startswith("redfish power_off")


def test_same_state_same_answer():
    rule = Persistence(count=2, window="600s")
    sigs = [_sig("b"), _sig("a"), _sig("a", kind="health_check", source="health_check")]
    first = observe(None, sigs, T0, rule)
    assert first == observe(None, list(reversed(sigs)), T0, rule)
