"""Period options: ``--since 24h`` (relative to now), an epoch or an ISO 8601 UTC time."""
import datetime

from gpufleet.capacity.duration import parse_duration

__all__ = ["parse_when"]


def parse_when(text, now):
    """Epoch seconds for ``text``: a duration ago (``"90m"``, ``"24h"``, ``"1d12h"``), an epoch, or ISO UTC."""
    text = (text or "").strip()
    try:
        return now - parse_duration(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        pass
    try:
        parsed = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError('Time "%s" is not understood. Pass a duration ago (90m, 24h, 2h30m, 7d), an '
                         'epoch, or ISO 8601 (2026-11-24T08:00:00Z).' % text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return parsed.timestamp()
