"""Scheduled windows in their own timezone, including windows that cross midnight."""
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from gpufleet.capacity.schedule import active_schedules, is_active

from tests.unit.gpufleet.capacity.fleet_factory import make_policy

WORKDAY = {"name": "workday", "days": ["mon", "tue", "wed", "thu", "fri"], "start": "08:00",
           "end": "20:00", "timezone": "Europe/Berlin", "floors": {"hot": 4}}
NIGHT = {"name": "night", "days": ["fri"], "start": "22:00", "end": "06:00",
         "timezone": "UTC", "floors": {"warm": 3}}
POOL = make_policy(schedules=[WORKDAY, NIGHT]).pools["p"]


def _at(text, zone):
    return datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone)).timestamp()


@pytest.mark.parametrize("when,zone,expected", [
    ("2027-01-15 08:00", "Europe/Berlin", ["workday"]),    # Friday, start is inclusive
    ("2027-01-15 07:59", "Europe/Berlin", []),
    ("2027-01-15 19:59", "Europe/Berlin", ["workday"]),
    ("2027-01-15 20:00", "Europe/Berlin", []),              # end is exclusive
    ("2027-01-16 10:00", "Europe/Berlin", []),              # Saturday
    ("2027-07-15 08:30", "Europe/Berlin", ["workday"]),     # summer time: still local 08:30
    ("2027-01-15 07:30", "UTC", ["workday"]),               # 08:30 in Berlin
    ("2027-01-15 23:00", "UTC", ["night"]),                 # Friday night
    ("2027-01-16 05:59", "UTC", ["night"]),                 # Saturday morning, Friday's window
    ("2027-01-16 06:00", "UTC", []),
    ("2027-01-16 23:00", "UTC", []),                        # Saturday night: not listed
    ("2027-01-15 05:00", "UTC", []),                        # Friday morning: Thursday's window
])
def test_active(when, zone, expected):
    now = _at(when, zone)
    assert [s.name for s in active_schedules(POOL, now)] == expected


def test_is_active_uses_the_schedule_timezone():
    schedule = POOL.schedules[0]
    assert is_active(schedule, _at("2027-01-15 10:00", "Europe/Berlin"))
    # 15:00 in New York is 21:00 in Berlin: after the window
    assert not is_active(schedule, _at("2027-01-15 15:00", "America/New_York"))
