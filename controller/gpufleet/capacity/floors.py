"""The floors in force for a pool at ``now``: base, raised by active scheduled windows, raised by
the forecast; capped by the ceilings. Returns the floors and why, for the decision log.

With a forecast, its floor is what the forecast wants ready minus the supply already committed
to demand (``PoolFloors.committed``: joined nodes, nodes on their way for pending jobs or gangs).
The planner counts that supply once per pass, after serving pending jobs, and takes each node
it releases off the count as it goes, so parking a node raises the floor in the same pass (the
node is held instead) rather than in the next one (a wake of the node just parked).
"""
from gpufleet.capacity.forecast import forecast_nodes, held_forecast
from gpufleet.capacity.schedule import active_schedules

__all__ = ["floors_at", "PoolFloors"]

_TIERS = ("hot", "warm")


class PoolFloors:
    """One pool's floors for one pass; ``floors[tier]`` reads the floor in force now.

    ``hold``: hold a raised forecast for ``forecast.min_on_time`` (the planner; the plain
    ``floors_at`` reads the forecast of this instant)."""

    def __init__(self, pool, now, samples=(), committed=0, hold=False, model=None):
        self.pool, self.committed = pool, committed
        self.committed_by = None      # the planner's breakdown of ``committed`` (notes)
        self.released = 0             # nodes this pass released from the committed count
        self.steady_level = None      # the steady powered level (planner; None: no steady)
        self.base = {tier: getattr(pool.floors, tier) for tier in _TIERS}
        self.won = {tier: "base" for tier in _TIERS}
        self.active = active_schedules(pool, now)
        self.planned = dict(self.base)
        for schedule in self.active:
            for tier in _TIERS:
                value = getattr(schedule.floors, tier)
                if value > self.planned[tier]:
                    self.planned[tier], self.won[tier] = value, f"schedule:{schedule.name}"
        read = held_forecast if hold else forecast_nodes
        self.wanted, self.forecast = read(pool, samples, now, model=model)
        self.tier = pool.forecast.tier
        # parking a hot-tier node: the forecast over the node's way back (its wake), when that
        # is longer than the lead time
        self.wanted_back = self.wanted
        if hold and self.wanted is not None and pool.estimates.warm > pool.forecast.lead_time:
            self.wanted_back, _ = read(pool, samples, now, pool.estimates.warm, model=model)

    def __getitem__(self, tier):
        return self._floor(tier)[0]

    def _floor(self, tier):
        """-> (floor, the rule that won, the uncapped value when a ceiling cut it)."""
        floor, won = self.planned[tier], self.won[tier]
        extra = self.extra
        if tier == self.tier and extra > floor:
            floor, won = extra, "forecast"
        ceiling = getattr(self.pool.ceilings, tier)
        if ceiling is not None and floor > ceiling:
            return ceiling, won + f" (capped by ceiling {ceiling})", floor
        return floor, won, None

    @property
    def extra(self):
        """The forecast's floor: the nodes it wants ready minus the supply committed already."""
        return 0 if self.wanted is None else max(0, self.wanted - self.committed)

    def keeps(self, ready_after):
        """True when the forecast wants a node back within its wake: with ``ready_after`` nodes
        ready (committed + hot) after parking it, the pool would fall below the forecast."""
        return self.tier == "hot" and self.wanted_back is not None and ready_after < self.wanted_back

    def release(self, count=1):
        """``count`` committed nodes leave (held or parked this pass): the forecast floor rises."""
        if self.wanted is not None:
            self.committed -= count
            self.released += count

    def floors(self):
        return {tier: self[tier] for tier in _TIERS}

    def why(self):
        floors, won, capped = {}, {}, {}
        for tier in _TIERS:
            floors[tier], won[tier], uncapped = self._floor(tier)
            if uncapped is not None:
                capped[tier] = uncapped
        forecast = self.forecast
        if self.wanted is not None:
            forecast = dict(forecast, joined_nodes=self.committed, floor=self.extra)
            if self.committed_by is not None:
                forecast.update(committed=dict(self.committed_by, released=self.released))
        return {"base": dict(self.base), "schedules": [s.name for s in self.active], "forecast": forecast,
                "floors": floors, "won": won, "capped_from": capped}


def floors_at(pool, now, samples=(), joined=0):
    """-> ({'hot': n, 'warm': n}, explanation). ``joined``: nodes of the pool busy or idle."""
    state = PoolFloors(pool, now, samples, joined)
    return state.floors(), state.why()
