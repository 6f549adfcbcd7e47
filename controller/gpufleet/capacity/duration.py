"""The one duration parser: policy fields, command-line flags and ``--since`` all read
durations here (``gpufleet.capacity.policy`` exports it as ``parse_duration``).

It imports nothing from the collection, so a command's flags parse (and ``--help`` works)
before the collection is found.
"""
import argparse
import re

__all__ = ["parse_duration", "duration_arg", "FORM"]

_UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))
# One or more <number><unit> parts, largest unit first, each unit at most once: 90s, 2h30m, 1d12h.
_DURATION = re.compile(r"^\s*%s$" % "".join(r"(?:(\d+(?:\.\d+)?)\s*%s\s*)?" % unit for unit, _ in _UNITS))
_BARE = re.compile(r"^\s*\d+(?:\.\d+)?\s*$")
FORM = "numbers with units d, h, m or s, largest first, like 90s, 15m, 2h, 2h30m or 1d12h"


def parse_duration(value, bare_seconds=False):
    """'90s', '15m', '2h', '7d', '2h30m', '1d12h' -> seconds (float).

    A bare number is refused (a unit is never guessed) unless ``bare_seconds``: a flag whose
    help says it takes seconds keeps taking them."""
    if isinstance(value, bool) or not isinstance(value, str):
        raise ValueError(f"a duration must be a string with a unit, got {value!r}; fix: write {FORM}")
    if bare_seconds and _BARE.match(value):
        return float(value)
    found = _DURATION.match(value)
    if not found or not any(found.groups()):
        raise ValueError(f"{value!r} is not a duration; fix: write {FORM}")
    return float(sum(float(part) * seconds for part, (_unit, seconds) in zip(found.groups(), _UNITS) if part))


def duration_arg(text):
    """argparse ``type=`` for a duration flag: seconds, or a duration such as 2h30m."""
    try:
        return parse_duration(text, bare_seconds=True)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).replace("fix: write ", "fix: give seconds or ")) from None
