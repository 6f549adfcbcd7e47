"""The policy's day2 section: defaults, and every rejection names its field path and a fix."""
import pytest

from gpufleet.capacity.policy import PolicyError, parse_policy

MINIMAL = "pools:\n  a100:\n    sku: a100\n    members: {groups: [rack1]}\n"


def _day2(text):
    return parse_policy(MINIMAL + f"    day2: {text}\n")


def test_defaults_do_not_change_the_planner_inputs():
    day2 = parse_policy(MINIMAL).pools["a100"].day2
    assert day2.budget == "10%"
    assert (day2.persistence.count, day2.persistence.window, day2.persistence.duration) == \
        (3, 600.0, None)
    assert (day2.max_recycles, day2.recycle_window, day2.drain_timeout) == (2, 86400.0, 7200.0)
    assert day2.on_drain_timeout == "requeue" and day2.renewal_max_age is None
    assert (day2.refresh.canaries, day2.refresh.max_canary_failures) == (1, 0)
    assert day2.redfish_interval == 60.0
    assert _day2("{redfish_interval: null}").pools["a100"].day2.redfish_interval is None
    assert day2.health_interval == 1800.0
    assert _day2("{health_interval: null}").pools["a100"].day2.health_interval is None
    assert _day2("{health_interval: 10m}").pools["a100"].day2.health_interval == 600.0


@pytest.mark.parametrize("text,budget", [("{budget: 3}", 3), ("{budget: 0}", 0),
                                         ("{budget: '25%'}", "25%"), ("{budget: 100%}", "100%")])
def test_budgets(text, budget):
    assert _day2(text).pools["a100"].day2.budget == budget


@pytest.mark.parametrize("text,path,words", [
    ("{budget: 150%}", "pools.a100.day2.budget", "percent above 0 and at most 100"),
    ("{budget: 0%}", "pools.a100.day2.budget", "percent above 0"),
    ("{budget: -1}", "pools.a100.day2.budget", "below 0"),
    ("{budget: true}", "pools.a100.day2.budget", "node count"),
    ("{budget: ten}", "pools.a100.day2.budget", "not a budget"),
    ("{persistence: {count: 0}}", "pools.a100.day2.persistence.count", "fix:"),
    ("{persistence: {window: 0s}}", "pools.a100.day2.persistence", "above 0s"),
    ("{persistence: {window: 600}}", "pools.a100.day2.persistence.window", "with a unit"),
    ("{max_recycles: 0}", "pools.a100.day2.max_recycles", "fix:"),
    ("{max_recyles: 3}", "pools.a100.day2.max_recyles", "unknown key"),
    ("{on_drain_timeout: cancel}", "pools.a100.day2.on_drain_timeout", "fix:"),
    ("{refresh: {canaries: 0}}", "pools.a100.day2.refresh.canaries", "fix:"),
    ("{redfish_interval: 0s}", "pools.a100.day2", "redfish_interval must be above 0s"),
    ("{health_interval: 30s}", "pools.a100.day2", "health_interval must be 1m or more"),
    ("{health_interval: often}", "pools.a100.day2.health_interval", "fix"),
    ("{renewal_reimage: 'yes'}", "pools.a100.day2.renewal_reimage", "true or false"),
])
def test_rejections_name_the_field(text, path, words):
    with pytest.raises(PolicyError) as err:
        _day2(text)
    assert len(err.value.problems) == 1
    line = err.value.problems[0]
    assert line.startswith(path + ":") and words in line, line
