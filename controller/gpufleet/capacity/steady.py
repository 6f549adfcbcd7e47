"""The steady powered level of a pool: few, batched changes of how many nodes are powered.

Nodes powered are those joined (busy, idle) or powered and on their way (hot, provisioning).
The level is the peak demand in nodes over the last ``steady.hold`` (the recorded history and
the jobs of this pass: running nodes plus pending nodes), plus ``steady.headroom`` spare nodes,
rounded up to a whole ``steady.step`` and capped at the pool's members (``headroom`` and
``step`` are node counts, or percents of the pool's members, rounded up: ``pool_nodes``):

- demand rising past the level raises it at once, and the nodes missing are woken together
  (one wake serves the arrivals that follow, up to the headroom);
- the level falls only when the peak of the whole ``hold`` fits a lower step, and then every
  surplus node idle past its idle time is parked in the same pass;
- between the two the powered count holds still: idle nodes the level keeps stay joined (jobs
  start on them at once), and woken nodes are resumed to joined.

A telemetry gap in the hold window is missing data, never low demand: the level does not fall
below the nodes powered now while the window holds a gap. Pure: history, jobs and ``now`` in.
"""
import math
from bisect import bisect_left

from gpufleet.capacity.forecast import GAP_S, gaps_in
from gpufleet.capacity.model import BUSY, HOT, IDLE, PROVISIONING, WARM
from gpufleet.capacity.policy import nodes_of

__all__ = ["steady_level", "powered_now", "pool_nodes", "POWERED"]

POWERED = (BUSY, IDLE, HOT, PROVISIONING)


def steady_level(pool, samples, now, demand_nodes, members, powered):
    """-> (level in nodes, explanation) or (None, {"enabled": False}).

    ``demand_nodes``: nodes running or asked for by pending jobs now; ``members``: the pool's
    nodes; ``powered``: nodes powered now (the level's floor while the window holds a gap)."""
    settings = pool.steady
    if not settings.enabled:
        return None, {"enabled": False}
    samples = samples or ()
    start = now - settings.hold
    first = bisect_left(samples, start, key=lambda s: s.minute)
    last = bisect_left(samples, now + 1e-9, key=lambda s: s.minute)
    window = samples[first:last]
    peak_gpus = max((s.gpus for s in window), default=0)
    peak = max(math.ceil(peak_gpus / pool.gpus_per_node - 1e-9), demand_nodes)
    headroom, step = pool_nodes(settings.headroom, members), pool_nodes(settings.step, members, least=1)
    level = min(members, step * math.ceil((peak + headroom) / step))
    why = {"enabled": True, "peak_nodes": peak, "peak_gpus_recorded": peak_gpus, "demand_nodes": demand_nodes,
           "headroom": headroom, "step": step, "hold_s": settings.hold, "level": level}
    shares = {f"{key}_set": value for key, value in (("headroom", settings.headroom), ("step", settings.step))
              if isinstance(value, str)}
    if shares:
        why.update(shares, pool_nodes=members)
    gaps = gaps_in(samples, start, now) if now - start > GAP_S else []
    if gaps and powered > level:
        level = min(members, powered)
        why.update(level=level, gap_note=f"{len(gaps)} telemetry gap(s) in the last {settings.hold:g}s: "
                   "the level does not fall below the nodes powered now")
    return level, why


def pool_nodes(value, members, least=0):
    """A ``steady`` node count as set (6) or a percent of the pool's ``members`` nodes ('10%'):
    nodes, rounded up, at least ``least``."""
    return max(least, nodes_of(value, members))


def powered_now(run, pool):
    """Nodes of ``pool`` powered after this pass's actions so far (parks and power-offs taken
    off, wakes and bring-ups to hot added)."""
    view = run.views[pool]
    count = sum(1 for name, node in view.nodes.items() if node.tier in POWERED and name not in view.parking)
    for action in run.actions:
        if action.pool != pool:
            continue
        if action.kind in ("wake", "bringup") and action.target_tier != WARM:
            count += sum(1 for n in action.nodes if view.nodes[n].tier not in POWERED)
        elif action.kind in ("park", "rollback") and action.target_tier == WARM:
            count -= sum(1 for n in action.nodes if view.nodes[n].tier in POWERED)
    return count
