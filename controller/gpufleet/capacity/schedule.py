"""Scheduled buffers: which of a pool's time windows are active at ``now`` (local time).

A window lists days (the day it starts), HH:MM start and end and an IANA timezone; an end
before the start crosses midnight, so fri 22:00-06:00 is active until sat 06:00.
"""
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from gpufleet.capacity.policy import DAYS

__all__ = ["active_schedules", "is_active"]


def _minutes(hhmm):
    hours, minutes = hhmm.split(":")
    return int(hours) * 60 + int(minutes)


def is_active(schedule, now):
    """True when ``now`` (epoch seconds) falls inside the window in its timezone."""
    local = datetime.fromtimestamp(now, ZoneInfo(schedule.timezone))
    minute = local.hour * 60 + local.minute
    start, end = _minutes(schedule.start), _minutes(schedule.end)
    today = DAYS[local.weekday()]
    if start < end:
        return today in schedule.days and start <= minute < end
    yesterday = DAYS[(local - timedelta(days=1)).weekday()]
    return (today in schedule.days and minute >= start) or \
        (yesterday in schedule.days and minute < end)


def active_schedules(pool, now):
    """The pool's windows active at ``now``, in policy order."""
    return [s for s in pool.schedules if is_active(s, now)]
