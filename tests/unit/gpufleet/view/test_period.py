"""``--since``/``--until``: a duration ago (the one duration parser), an epoch or ISO time."""
import pytest

from gpufleet.view.period import parse_when

NOW = 1_000_000.0


@pytest.mark.parametrize("text, ago", [("24h", 86400), ("90m", 5400), ("2h30m", 9000), ("1d12h", 129600)])
def test_durations_ago_single_and_compound(text, ago):
    assert parse_when(text, NOW) == NOW - ago


def test_epoch_and_iso_times():
    assert parse_when("1000", NOW) == 1000.0
    assert parse_when("1970-01-02T00:00:00Z", NOW) == 86400.0


@pytest.mark.parametrize("text", ["2h30", "h", "-5m", "1.5.2h"])
def test_bad_forms_name_the_value_and_the_forms(text):
    with pytest.raises(ValueError) as err:
        parse_when(text, NOW)
    assert 'Time "%s" is not understood' % text in str(err.value) and "2h30m" in str(err.value)
