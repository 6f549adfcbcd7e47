"""What a policy costs and what it buys, integrated exactly over simulated time.

- shortfall: GPU-minutes of demand that waited while the pool had nodes that were not ready
  (hot, warm, cold, provisioning: capacity existed but was not schedulable), and the number of
  episodes (maximal spans with such waiting). Demand that waited because every usable node was
  busy is reported apart (``over_capacity_gpu_minutes``): no warmth policy can fix it.
- added wait: per job, the seconds it spent in that shortfall; p50/p95 weighted by GPUs.
- idle-but-powered GPU-hours by tier (idle joined, hot, provisioning): the cost of warmth.
- powered-off node-hours (warm + cold); power cycles = power-offs per node per day.
- partial starts: a gang admitted with fewer nodes than it needs, or with nodes not ready.
- per 10-minute interval (``INTERVAL_S``, from the run's start): shortfall node-minutes and the
  most nodes short at any moment (summed: shortfall node-intervals), mean powered-off nodes,
  power-state changes (power-ons: bring-ups, wakes; power-offs), powered-but-idle and busy
  node-minutes; the run's ``intervals`` series holds them, the summary their totals.
- powered count: nodes joined (busy, idle) or powered and on their way (hot, provisioning) at
  each interval's end (failed and parked nodes are not counted); an interval whose count differs
  from the previous interval's is a change of the powered count (the published Helios
  baseline's figure, per day). The first interval has no previous one and never counts.
- thrash: wakes of a node within ``THRASH_S`` of its own power-off.
"""
import math

from gpufleet.capacity import model

__all__ = ["Metrics", "weighted_percentile", "count_changes"]

POWERED_IDLE = (model.IDLE, model.HOT, model.PROVISIONING)
INTERVAL_S = 600.0
THRASH_S = 60.0
POWERED = (model.BUSY,) + POWERED_IDLE
INTERVAL_FIELDS = ("start", "shortfall_node_minutes", "nodes_short_peak", "powered_off_nodes_mean",
                   "power_changes", "idle_powered_node_minutes", "busy_node_minutes", "powered_nodes")
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


def count_changes(powered):
    """Intervals whose powered count differs from the previous interval's (the first: never)."""
    return sum(1 for before, after in zip(powered, powered[1:]) if after != before)


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
        self.power_ons = self.quick_wakes = 0
        self.parked_at = {}         # node -> when it last powered off
        self.intervals = {name: [] for name in INTERVAL_FIELDS}
        self._open_interval(start)

    def _open_interval(self, start):
        self._interval = {"start": start, "short_s": 0.0, "peak": 0, "off_s": 0.0, "changes": 0,
                          "idle_s": 0.0, "busy_s": 0.0}
        self._interval_end = start + INTERVAL_S

    def _close_interval(self, end):
        cur, out = self._interval, self.intervals
        length = max(end - cur["start"], 1e-9)
        out["start"].append(cur["start"])
        out["shortfall_node_minutes"].append(round(cur["short_s"] / self.fleet.gpn / 60.0, 3))
        out["nodes_short_peak"].append(cur["peak"])
        out["powered_off_nodes_mean"].append(round(cur["off_s"] / length, 3))
        out["power_changes"].append(cur["changes"])
        out["idle_powered_node_minutes"].append(round(cur["idle_s"] / 60.0, 3))
        out["busy_node_minutes"].append(round(cur["busy_s"] / 60.0, 3))
        out["powered_nodes"].append(sum(self.fleet.counts[tier] for tier in POWERED))

    def _integrate(self, dt):
        cur, counts = self._interval, self.fleet.counts
        cur["short_s"] += self.short_gpus * dt
        cur["off_s"] += (counts[model.WARM] + counts[model.COLD]) * dt
        cur["idle_s"] += sum(counts[tier] for tier in POWERED_IDLE) * dt
        cur["busy_s"] += counts[model.BUSY] * dt

    def power_on(self, node, now):
        """A bring-up or wake of ``node`` started (a wake soon after its park is thrash)."""
        self.advance(now)
        self.power_ons += 1
        self._interval["changes"] += 1
        parked = self.parked_at.get(node)
        if parked is not None and now - parked <= THRASH_S:
            self.quick_wakes += 1

    def power_off(self, node, now):
        self.advance(now)
        self.power_offs += 1
        self._interval["changes"] += 1
        self.parked_at[node] = now

    def advance(self, now):
        """Integrate the current rates from the last change up to ``now``."""
        dt = now - self.last
        if dt <= 0:
            return
        at = self.last
        while at < now:
            upto = min(now, self._interval_end)
            self._integrate(upto - at)
            at = upto
            if at >= self._interval_end:
                self._close_interval(at)
                self._open_interval(at)
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
        nodes_short = math.ceil(short_gpus / self.fleet.gpn)
        if nodes_short > self._interval["peak"]:
            self._interval["peak"] = nodes_short
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
        if end > self._interval["start"]:
            self._close_interval(end)
            self._open_interval(end)
        gpn, nodes = self.fleet.gpn, len(self.fleet.nodes)
        days = max(end - self.start, 1e-9) / 86400.0
        seconds = max(end - self.start, 1e-9)
        powered = sum(self.tier_seconds[tier] for tier in POWERED)
        off = self.tier_seconds[model.WARM] + self.tier_seconds[model.COLD]
        intervals = self.intervals
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
            "power_ons": self.power_ons,
            "power_changes_per_day": round((self.power_ons + self.power_offs) / days, 3),
            "wakes_within_60s_of_park": self.quick_wakes,
            "powered_off_nodes_mean": round(off / seconds, 3),
            "powered_off_fraction": round(off / seconds / nodes, 4) if nodes else None,
            "powered_count_change_intervals": count_changes(intervals["powered_nodes"]),
            "powered_count_change_intervals_per_day": round(count_changes(intervals["powered_nodes"]) / days, 3),
            "shortfall_node_minutes": round(self.short_gpu_s / gpn / 60.0, 3),
            "shortfall_node_intervals": sum(intervals["nodes_short_peak"]),
            "shortfall_intervals": sum(1 for peak in intervals["nodes_short_peak"] if peak),
            "interval_s": INTERVAL_S,
            "idle_powered_node_hours": round(sum(self.tier_seconds[t] for t in POWERED_IDLE) / 3600.0, 3),
            "powered_used_rate": round(self.tier_seconds[model.BUSY] / powered, 4) if powered else None,
            "partial_starts": self.partial_starts,
            "actions": dict(sorted(self.actions.items())),
            "refused_actions": dict(sorted(self.refused.items())),
        }
