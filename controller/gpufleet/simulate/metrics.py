"""What a policy costs and what it buys, integrated exactly over simulated time.

- shortfall: GPU-minutes of demand that waited while the pool had nodes that were not ready
  (hot, warm, cold, provisioning: capacity existed but was not schedulable), and the number of
  episodes (maximal spans with such waiting). Demand that waited because every usable node was
  busy is reported apart (``over_capacity_gpu_minutes``): no warmth policy can fix it.
- added wait: per job, the seconds it spent in that shortfall; p50/p95 weighted by GPUs.
- idle-but-powered GPU-hours by tier (idle joined, hot, provisioning): the cost of warmth.
- powered-off node-hours (warm + cold); power cycles = power-offs per node per day.
- partial starts: a gang admitted with fewer nodes than it needs, or with nodes not ready.
"""
from gpufleet.capacity import model

__all__ = ["Metrics", "weighted_percentile"]

POWERED_IDLE = (model.IDLE, model.HOT, model.PROVISIONING)
SERIES = ("demand", "busy", "idle", "hot", "provisioning", "warm", "cold", "unavailable", "shortfall", "over_capacity")


def weighted_percentile(pairs, q):
    """The smallest value v with at least q of the total weight at or below v; None when empty."""
    pairs = sorted(pairs)
    total = sum(weight for _, weight in pairs)
    if not total:
        return None
    running = 0.0
    for value, weight in pairs:
        running += weight
        if running >= q * total - 1e-9:
            return value
    return pairs[-1][0]


class Metrics:
    def __init__(self, fleet, start):
        self.fleet, self.start, self.last = fleet, start, start
        self.tier_seconds = dict.fromkeys(model.TIERS, 0.0)
        self.short_gpu_s = self.over_gpu_s = 0.0
        self.short_gpus = self.over_gpus = 0
        self.short_jobs = []
        self.episodes = self.power_offs = self.partial_starts = 0
        self.actions = {}
        self.refused = {}
        self.series = {name: [] for name in ("time",) + SERIES}

    def advance(self, now):
        """Integrate the current rates from the last change up to ``now``."""
        dt = now - self.last
        if dt <= 0:
            return
        for tier, count in self.fleet.counts.items():
            if count:
                self.tier_seconds[tier] += count * dt
        if self.short_gpus:
            self.short_gpu_s += self.short_gpus * dt
            for job in self.short_jobs:
                job.ready_wait += dt
        self.over_gpu_s += self.over_gpus * dt
        self.last = now

    def classify(self, now, pending):
        """Split pending jobs (FIFO) into readiness shortfall and over-capacity from ``now`` on."""
        self.advance(now)
        counts = self.fleet.counts
        budget = len(self.fleet.nodes) - counts[model.BUSY] - counts[model.UNAVAILABLE]
        short, short_gpus, over_gpus = [], 0, 0
        for job in pending:
            if job.nodes <= budget:
                budget -= job.nodes
                short.append(job)
                short_gpus += job.gpus
            else:
                over_gpus += job.gpus
        if short_gpus and not self.short_gpus:
            self.episodes += 1
        self.short_jobs, self.short_gpus, self.over_gpus = short, short_gpus, over_gpus

    def action(self, kind):
        self.actions[kind] = self.actions.get(kind, 0) + 1

    def refuse(self, action, why):
        key = "%s: %s" % (action.kind, why)
        self.refused[key] = self.refused.get(key, 0) + 1

    def sample(self, now, demand_gpus):
        counts, series = self.fleet.counts, self.series
        series["time"].append(now)
        series["demand"].append(demand_gpus)
        for tier in ("busy", "idle", "hot", "provisioning", "warm", "cold", "unavailable"):
            series[tier].append(counts[tier])
        series["shortfall"].append(self.short_gpus)
        series["over_capacity"].append(self.over_gpus)

    def summary(self, end, jobs):
        """The metrics of a finished run (``jobs``: every job the run saw)."""
        self.advance(end)
        gpn, nodes = self.fleet.gpn, len(self.fleet.nodes)
        days = max(end - self.start, 1e-9) / 86400.0
        waited = [(job.ready_wait, job.gpus or 1) for job in jobs if job.ready_wait > 0]
        p50, p95 = weighted_percentile(waited, 0.5), weighted_percentile(waited, 0.95)
        return {
            "shortfall_gpu_minutes": round(self.short_gpu_s / 60.0, 3),
            "shortfall_episodes": self.episodes,
            "added_wait_p50_s": None if p50 is None else round(p50, 3),
            "added_wait_p95_s": None if p95 is None else round(p95, 3),
            "jobs": len(jobs),
            "jobs_waited": len(waited),
            "over_capacity_gpu_minutes": round(self.over_gpu_s / 60.0, 3),
            "idle_powered_gpu_hours": {tier: round(self.tier_seconds[tier] * gpn / 3600.0, 3) for tier in POWERED_IDLE},
            "powered_off_node_hours": round((self.tier_seconds[model.WARM] + self.tier_seconds[model.COLD]) / 3600.0, 3),
            "busy_gpu_hours": round(self.tier_seconds[model.BUSY] * gpn / 3600.0, 3),
            "power_cycles_per_node_day": round(self.power_offs / nodes / days, 4),
            "power_offs": self.power_offs,
            "partial_starts": self.partial_starts,
            "actions": dict(sorted(self.actions.items())),
            "refused_actions": dict(sorted(self.refused.items())),
        }
