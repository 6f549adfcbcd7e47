"""Latency distributions: presets, files, sampling, and errors naming the key."""
import random

import pytest

from gpufleet.simulate.errors import SimulateError
from gpufleet.simulate.latency import Distribution, Latency, load_latency


def test_fixed_uniform_lognormal():
    rng = random.Random(3)
    assert Distribution("hot", {"dist": "fixed", "seconds": 5}, "t").sample(rng) == 5.0
    draws = [Distribution("warm", {"dist": "uniform", "low": 10, "high": 20}, "t").sample(rng) for _ in range(200)]
    assert 10 <= min(draws) and max(draws) <= 20
    logn = Distribution("cold", {"dist": "lognormal", "median": 100, "sigma": 0.5}, "t")
    samples = sorted(logn.sample(rng) for _ in range(2001))
    assert 85 < samples[1000] < 115           # the median of 2,001 draws sits near 100


def test_same_seed_same_draws():
    a, b = load_latency(), load_latency()
    assert [a.sample("cold") for _ in range(5)] == [b.sample("cold") for _ in range(5)]


def test_file_overrides_preset(tmp_path):
    path = tmp_path / "lat.yml"
    path.write_text("preset: lab\nseed: 7\nwarm: {dist: fixed, seconds: 42}\ngate_failure: 0.5\n")
    lat = load_latency(str(path))
    assert lat.sample("warm") == 42.0 and lat.gate_failure == 0.5 and lat.seed == 7
    assert lat.describe()["cold"] == "uniform(low=230, high=300)"      # from the lab preset


@pytest.mark.parametrize("spec, message", [
    ({"hot": {"dist": "gamma"}}, r"hot needs dist: one of fixed, uniform, lognormal"),
    ({"hot": {"dist": "fixed"}}, r"hot.seconds must be a number >= 0"),
    ({"warm": {"dist": "uniform", "low": 5, "high": 1}}, r"warm.low \(5\) is above warm.high \(1\)"),
    ({"cold": {"dist": "fixed", "seconds": 1, "mean": 2}}, r"cold has unknown key\(s\) mean"),
    ({"gate_failure": 1.5}, r"gate_failure must be a probability"),
    ({"colde": {}}, r"unknown key\(s\) colde"),
    ({"preset": "cloud"}, r"preset 'cloud' is unknown"),
])
def test_bad_latency_names_the_key(spec, message):
    with pytest.raises(SimulateError, match=message):
        Latency(spec, where="lat.yml")


def test_a_key_written_twice_in_a_latency_file_is_refused(tmp_path):
    path = tmp_path / "lat.yml"
    path.write_text("preset: lab\ngate_failure: 0.5\ngate_failure: 0\n")
    with pytest.raises(SimulateError) as caught:
        load_latency(str(path))
    assert str(caught.value) == ("Latency file %s line 3: key 'gate_failure' appears twice (first on line 2); fix: "
                                 "keep one of the two keys." % path)


def test_a_latency_file_that_is_not_utf8_is_refused(tmp_path):
    path = tmp_path / "lat.yml"
    path.write_bytes(b"preset: lab\nseed: \xff\n")
    with pytest.raises(SimulateError, match=r"lat.yml: not UTF-8 text \(byte 18\); fix: save the file as UTF-8"):
        load_latency(str(path))
