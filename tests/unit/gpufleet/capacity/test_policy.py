"""Policy validation: the examples load, and every rejection names the field path and a fix."""
from pathlib import Path

import pytest

from gpufleet.capacity.policy import PolicyError, load_policy, parse_duration, parse_policy

EXAMPLES = Path(__file__).resolve().parents[4] / "controller/gpufleet/capacity/examples"

MINIMAL = "pools:\n  a100:\n    sku: a100\n    members: {groups: [rack1]}\n"


def _pool(extra):
    """A minimal valid policy with ``extra`` YAML lines added under the pool a100."""
    lines = "".join(f"    {line}\n" for line in extra.splitlines())
    return MINIMAL + lines


@pytest.mark.parametrize("name", ["lab.yml", "production.yml"])
def test_examples_load(name):
    policy = load_policy(EXAMPLES / name)
    assert policy.pools, name


def test_defaults():
    policy = parse_policy(MINIMAL)
    pool = policy.pools["a100"]
    assert policy.fleet.interval == 10.0
    assert policy.fleet.concurrency_limit == 10
    assert pool.failures_before_break_fix == 2
    assert (pool.floors.hot, pool.floors.warm) == (0, 0)
    assert pool.ceilings.hot is None
    assert pool.park_to == "auto"
    assert pool.forecast.enabled is False


@pytest.mark.parametrize("text,seconds", [("90s", 90), ("15m", 900), ("2h", 7200),
                                          ("7d", 604800), ("1.5h", 5400)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


# (policy text, field path expected in the error, words expected in the error)
REJECTIONS = [
    (_pool("floors: {hot: -1}"), "pools.a100.floors.hot", "greater than or equal to 0"),
    (_pool("floors: {hot: '2'}"), "pools.a100.floors.hot", "whole number"),
    (_pool("floors: {hot: true}"), "pools.a100.floors.hot", "whole number"),
    (_pool("floors: {hott: 2}"), "pools.a100.floors.hott", "allowed here: hot, warm"),
    (_pool("flors: {hot: 2}"), "pools.a100.flors", "unknown key"),
    (_pool("ceilings: {hot: 1}\nfloors: {hot: 2}"), "pools.a100", "above ceilings.hot"),
    (_pool("gang_deadline: 30"), "pools.a100.gang_deadline", "with a unit"),
    (_pool("idle_time: 15x"), "pools.a100.idle_time", "not a duration"),
    (_pool("gate_validity: ''"), "pools.a100.gate_validity", "not a duration"),
    (_pool("max_concurrent_bringups: 0"), "pools.a100.max_concurrent_bringups", "greater than"),
    (_pool("failures_before_break_fix: 0"), "pools.a100.failures_before_break_fix", "greater"),
    (_pool("park_to: cold"), "pools.a100.park_to", "'auto', 'hot' or 'warm'"),
    (_pool("gpus_per_node: 0"), "pools.a100.gpus_per_node", "greater than"),
    (_pool("estimates: {cold: soon}"), "pools.a100.estimates.cold", "not a duration"),
    (_pool("forecast: {quantile: 1.5}"), "pools.a100.forecast.quantile", "less than or equal"),
    (_pool("forecast: {quantile: 0}"), "pools.a100.forecast.quantile", "greater than 0"),
    (_pool("forecast: {lookback_weeks: 0}"), "pools.a100.forecast.lookback_weeks", "greater"),
    (_pool("forecast: {bucket_minutes: 2000}"), "pools.a100.forecast.bucket_minutes", "less"),
    (_pool("forecast: {trend_weight: -1}"), "pools.a100.forecast.trend_weight", "greater"),
    (_pool("forecast: {tier: cold}"), "pools.a100.forecast.tier", "'hot' or 'warm'"),
    (_pool("forecast: {enabled: maybe}"), "pools.a100.forecast.enabled", "true or false"),
    (_pool("forecast: {lead_time: 30}"), "pools.a100.forecast.lead_time", "with a unit"),
    (_pool("schedules: [{name: w, start: '8:00', end: '20:00', floors: {hot: 1}}]"),
     "pools.a100.schedules[0].start", "HH:MM"),
    (_pool("schedules: [{name: w, start: '08:00', end: '24:00', floors: {hot: 1}}]"),
     "pools.a100.schedules[0].end", "HH:MM"),
    (_pool("schedules: [{name: w, start: '08:00', end: '08:00', floors: {hot: 1}}]"),
     "pools.a100.schedules[0]", "window is empty"),
    (_pool("schedules: [{name: w, start: '08:00', end: '20:00', timezone: Mars/Base, "
           "floors: {hot: 1}}]"), "pools.a100.schedules[0].timezone", "IANA"),
    (_pool("schedules: [{name: w, days: [monday], start: '08:00', end: '20:00', "
           "floors: {hot: 1}}]"), "pools.a100.schedules[0].days[0]", "'mon'"),
    (_pool("schedules: [{name: w, start: '08:00', end: '20:00'}]"),
     "pools.a100.schedules[0].floors", "add it"),
    (_pool("ceilings: {hot: 2}\nschedules: [{name: w, start: '08:00', end: '20:00', "
           "floors: {hot: 3}}]"), "pools.a100", "schedule 'w' floors.hot (3) is above"),
    (_pool("schedules:\n  - {name: w, start: '08:00', end: '20:00', floors: {hot: 1}}\n"
           "  - {name: w, start: '21:00', end: '22:00', floors: {hot: 1}}"),
     "pools.a100", "schedule names repeat"),
    ("pools:\n  a100:\n    sku: a100\n    members: {}\n", "pools.a100.members", "no member rule"),
    (_pool("ceilings: {hot: -1}"), "pools.a100.ceilings.hot", "greater than or equal to 0"),
    ("pools:\n  a100:\n    sku: a\n    members: {patterns: gpu-*}\n",
     "pools.a100.members.patterns", "write a list"),
    ("pools:\n  a100:\n    sku: a\n    members: {labels: {rack: 42}}\n",
     "pools.a100.members.labels.rack", "write a string"),
    (_pool("match: {partitions: train}"), "pools.a100.match.partitions", "write a list"),
    (_pool("schedules: [{name: w, days: [], start: '08:00', end: '20:00', floors: {hot: 1}}]"),
     "pools.a100.schedules[0].days", "never opens"),
    ("pools:\n  a100:\n", "pools.a100", "write a mapping"),
    ("pools:\n  a100:\n    members: {groups: [g]}\n", "pools.a100.sku", "add it"),
    ("pools: {}\n", "pools", "no pools"),
    ("pools:\n  A100!:\n    sku: a\n    members: {groups: [g]}\n", "pools", "not allowed"),
    (MINIMAL + "fleet: {concurrency_limit: 0}\n", "fleet.concurrency_limit", "greater"),
    (MINIMAL + "fleet: {interval: 10}\n", "fleet.interval", "with a unit"),
    (MINIMAL + "version: 2\n", "version", "Input should be 1"),
    (MINIMAL + "extra: 1\n", "extra", "allowed here: version, fleet, pools"),
    ("- a\n- b\n", "(top level)", "expected a mapping"),
    ("pools: [\n", "(file) line", "not valid YAML: expected"),
    (_pool("floors: {hot: 1}\nfloors: {hot: 2}"), "(file) line 6",
     "'floors' appears twice (first on line 5)"),
]


@pytest.mark.parametrize("text,path,words", REJECTIONS, ids=[r[1] + ":" + r[2] for r in REJECTIONS])
def test_rejections_name_the_field_and_fix(text, path, words):
    with pytest.raises(PolicyError) as caught:
        parse_policy(text, source="test.yml")
    message = str(caught.value)
    line = next((p for p in caught.value.problems if p.startswith(path)), None)
    assert line is not None, message
    assert words in line, message
    assert "fix:" in line, message
    assert "nothing was applied" in message and "test.yml" in message


def test_every_problem_is_reported_at_once():
    text = _pool("floors: {hot: -1, warm: -2}\nidle_time: x")
    with pytest.raises(PolicyError) as caught:
        parse_policy(text)
    assert len(caught.value.problems) == 3


def test_unreadable_file(tmp_path):
    with pytest.raises(PolicyError) as caught:
        load_policy(tmp_path / "missing.yml")
    assert "cannot read it" in str(caught.value) and "fix:" in str(caught.value)


# Read through the shared strict reader: these were a UnicodeDecodeError and a RecursionError.
@pytest.mark.parametrize("raw, line, words", [
    (MINIMAL.encode() + b"    idle_time: 10\xff\n", "(file)", "not UTF-8 text (byte 77); fix: save the file as UTF-8"),
    (b"pools:" + b" [" * 3000, "(file) line 1", "nested deeper than 64 levels; fix: flatten the document"),
    (b"a: &a [x, x, x, x, x, x, x, x, x, x]\n" + b"".join(
        b"%s: &%s [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]\n" % ((bytes([98 + i]),) * 2 + (bytes([97 + i]),) * 10)
        for i in range(8)), "(file)", "expands to more than 1000000 values through its aliases"),
])
def test_unreadable_yaml_is_one_problem_naming_line_and_fix(tmp_path, raw, line, words):
    path = tmp_path / "policy.yml"
    path.write_bytes(raw)
    for read in (lambda: load_policy(path), lambda: parse_policy(raw, source=str(path))):
        with pytest.raises(PolicyError) as caught:
            read()
        assert caught.value.problems == [caught.value.problems[0]] and caught.value.problems[0].startswith(line)
        assert words in caught.value.problems[0] and str(path) in str(caught.value)


def test_a_device_file_is_refused_not_read_for_ever():
    with pytest.raises(PolicyError) as caught:
        load_policy("/dev/zero")
    assert caught.value.problems == ["(file): not a regular file; fix: pass the path of a YAML file"]


def test_size_warnings_name_a_floor_above_the_pool():
    from gpufleet.capacity.policy import size_warnings
    from tests.unit.gpufleet.capacity.fleet_factory import make_policy
    policy = make_policy(floors={"hot": 3, "warm": 2},
                         schedules=[{"name": "day", "start": "08:00", "end": "18:00", "floors": {"hot": 4}}])
    lines = size_warnings(policy, {"p": 4})
    assert len(lines) == 1 and "pools.p floors (hot 3 + warm 2 = 5) exceed the pool's 4 node(s)" in lines[0]
    assert len(size_warnings(policy, {"p": 3})) == 2
    assert size_warnings(policy, {"p": 5}) == [] and size_warnings(policy, {}) == []
