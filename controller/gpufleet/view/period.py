"""Period options: ``--since 24h`` (relative to now), an epoch or an ISO 8601 UTC time."""
import datetime
import re

__all__ = ["parse_when"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_when(text, now):
    """Epoch seconds for ``text``: ``"90m"``/``"24h"``/``"7d"`` ago, an epoch, or ISO UTC."""
    text = (text or "").strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd])", text)
    if match:
        return now - float(match.group(1)) * _UNITS[match.group(2)]
    try:
        return float(text)
    except ValueError:
        pass
    try:
        parsed = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError('Time "%s" is not understood. Pass a duration ago (90m, 24h, 7d), an '
                         'epoch, or ISO 8601 (2026-11-24T08:00:00Z).' % text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return parsed.timestamp()
