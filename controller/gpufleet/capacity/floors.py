"""The floors in force for a pool at ``now``: base, raised by active scheduled windows, raised by
the forecast; capped by the ceilings. Returns the floors and why, for the decision log."""
from gpufleet.capacity.forecast import forecast_floor
from gpufleet.capacity.schedule import active_schedules

__all__ = ["floors_at"]

_TIERS = ("hot", "warm")


def floors_at(pool, now, samples=(), joined=0):
    """-> ({'hot': n, 'warm': n}, explanation). ``joined``: nodes of the pool busy or idle."""
    floors = {tier: getattr(pool.floors, tier) for tier in _TIERS}
    won = {tier: "base" for tier in _TIERS}
    active = active_schedules(pool, now)
    for schedule in active:
        for tier in _TIERS:
            value = getattr(schedule.floors, tier)
            if value > floors[tier]:
                floors[tier], won[tier] = value, f"schedule:{schedule.name}"
    extra, forecast = forecast_floor(pool, samples, now, joined)
    tier = pool.forecast.tier
    if extra > floors[tier]:
        floors[tier], won[tier] = extra, "forecast"
    capped = {}
    for tier in _TIERS:
        ceiling = getattr(pool.ceilings, tier)
        if ceiling is not None and floors[tier] > ceiling:
            capped[tier] = floors[tier]
            floors[tier] = ceiling
            won[tier] += f" (capped by ceiling {ceiling})"
    return floors, {
        "base": {tier: getattr(pool.floors, tier) for tier in _TIERS},
        "schedules": [s.name for s in active], "forecast": forecast,
        "floors": dict(floors), "won": won, "capped_from": capped,
    }
