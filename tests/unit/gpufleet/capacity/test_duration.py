"""The one duration parser (gpufleet.capacity.duration): policy fields, flags and --since."""
import argparse

import pytest

from gpufleet.capacity import policy
from gpufleet.capacity.duration import duration_arg, parse_duration


@pytest.mark.parametrize("text, seconds", [
    ("90s", 90), ("15m", 900), ("1h", 3600), ("7d", 604800), ("1.5h", 5400), ("0s", 0),
    ("2h30m", 9000), ("1d12h", 129600), ("1h1m1s", 3661), ("1d2h3m4s", 93784), ("2h 30m", 9000),
    (" 90 s ", 90), ("1m0.5s", 60.5),
])
def test_single_and_compound_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["2h30", "h", "-5m", "1.5.2h", "", "   ", "30m2h", "1h1h", "5x", "1e3s",
                                  "2 h 30", "nan", "inf s", "1d-2h", "+5m", "90"])
def test_bad_durations_name_the_value_and_the_form(text):
    with pytest.raises(ValueError) as err:
        parse_duration(text)
    message = str(err.value)
    assert repr(text) in message and "2h30m" in message and "largest first" in message


@pytest.mark.parametrize("value", [90, 1.5, None, True, ["1h"]])
def test_a_duration_is_text_with_a_unit(value):
    with pytest.raises(ValueError) as err:
        parse_duration(value)
    assert "a duration must be a string with a unit" in str(err.value) and repr(value) in str(err.value)


def test_bare_numbers_are_seconds_only_where_asked():
    assert parse_duration("90", bare_seconds=True) == 90.0
    assert parse_duration("0.5", bare_seconds=True) == 0.5
    assert parse_duration("2m", bare_seconds=True) == 120.0
    for text in ("nan", "inf", "-1", "1e3", "2h30"):
        with pytest.raises(ValueError):
            parse_duration(text, bare_seconds=True)


def test_policy_uses_this_parser_for_its_fields():
    assert policy.parse_duration is parse_duration
    assert policy.Fleet(interval="1m30s").interval == 90.0


def test_flag_type_gives_seconds_or_a_usage_error():
    assert duration_arg("1h30m") == 5400.0 and duration_arg("10") == 10.0
    with pytest.raises(argparse.ArgumentTypeError) as err:
        duration_arg("2h30")
    assert "'2h30' is not a duration" in str(err.value) and "give seconds or" in str(err.value)
