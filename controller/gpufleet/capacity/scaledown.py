"""Scale-down for one pool: long-idle joined nodes are held (hot) or parked (warm), surplus hot
nodes are parked, never below a floor, never above a ceiling, never a node running a job.

``park_to: auto`` fills the hot floor first (hold), then parks; ``hot`` only holds; ``warm``
only parks. Pending jobs keep the idle nodes Slurm will start them on.

With a forecast (``floors``: gpufleet.capacity.floors.PoolFloors), a node released comes off
the supply the forecast floor nets out, and a node the forecast wants back within its wake
(hot tier) is not parked: with ``park_to: auto`` it is held hot, with ``warm`` it stays idle.
"""
from gpufleet.capacity.emit import ago
from gpufleet.capacity.model import HOT, IDLE, WARM
from gpufleet.capacity.steady import powered_now

__all__ = ["release_idle", "park_surplus_hot"]


def _long_idle(run, view, idle_time, keep):
    """Idle nodes past the idle time, longest idle first, minus the ``keep`` youngest idle."""
    idle = [view.nodes[name] for name in view.free.get(IDLE, ())]
    idle = [n for n in idle if not n.jobs and n.idle_since is not None]
    idle.sort(key=lambda n: (n.idle_since, n.node))
    movable = idle[:max(0, len(idle) - keep)]
    return [n for n in movable if run.now - n.idle_since >= idle_time]


def _room(ceiling, have):
    return True if ceiling is None else have < ceiling


def release_idle(run, pool, floors, hot_have, warm_coming):
    """Hold or park long-idle joined nodes. Runs before the floors are filled, so a held node
    spares a wake. ``hot_have``: hot nodes had or on the way; ``warm_coming``: nodes on their
    way to warm. Returns both after."""
    settings = run.policy.pools[pool]
    view = run.views[pool]
    warm_have = view.count(WARM) + warm_coming
    level = floors.steady_level
    powered = None if level is None else powered_now(run, pool)
    for node in _long_idle(run, view, settings.idle_time, view.idle_claimed):
        why = (f"{node.node} idle {ago(run.now - node.idle_since)} "
               f"(idle time {ago(settings.idle_time)})")
        if level is not None and powered <= level:
            run.note(pool, "kept", f"{why}: kept joined: {powered} node(s) powered, steady level {level}")
            continue
        floors.release()
        to_hot = settings.park_to == "hot" or \
            (settings.park_to == "auto" and hot_have < floors["hot"])
        if to_hot and _room(settings.ceilings.hot, hot_have):
            run.add("hold", pool, (node.node,), f"{why}; hot {hot_have} of floor {floors['hot']}: "
                    "holding it hot (drained, powered)", target_tier=HOT)
            hot_have += 1
        elif not to_hot and _wanted_back(run, pool, floors, hot_have, node.node):
            floors.release(-1)
            continue
        elif not to_hot and _room(settings.ceilings.warm, warm_have) \
                and run.budget.spend(pool, "park"):
            run.add("park", pool, (node.node,), f"{why}; hot floor {floors['hot']} met: "
                    "parking it warm (drain, power off)", target_tier=WARM)
            warm_have += 1
            powered = None if powered is None else powered - 1
        else:
            floors.release(-1)
            continue
        view.free[IDLE].remove(node.node)
    return hot_have, warm_have - view.count(WARM)


def _wanted_back(run, pool, floors, ready, node):
    """True (and noted) when the forecast wants ``node`` back within its wake: ``ready`` hot
    nodes plus the committed supply, without it, fall short of the forecast."""
    keeps = getattr(floors, "keeps", None)
    if keeps is None or not keeps(floors.committed + ready):
        return False
    run.note(pool, "kept", f"{node} not parked: the forecast wants {floors.wanted_back} node(s) ready "
             f"within its wake ({ago(run.policy.pools[pool].estimates.warm)}), "
             f"{floors.committed + ready} without it")
    return True


def park_surplus_hot(run, pool, floors, hot_have, warm_coming):
    """Hot nodes beyond the floor, hot for longer than the idle time (or above the hot
    ceiling), go warm; the floor counts nodes on their way, so it is never undercut."""
    settings = run.policy.pools[pool]
    if settings.park_to == "hot":
        return
    view = run.views[pool]
    warm_have = view.count(WARM) + warm_coming
    ceiling = settings.ceilings.hot
    hot = sorted((view.nodes[name] for name in view.free.get(HOT, ())),
                 key=lambda n: (n.since, n.node))
    level = floors.steady_level
    powered = None if level is None else powered_now(run, pool)
    for node in hot:
        over_ceiling = ceiling is not None and hot_have > ceiling
        stale = run.now - node.since >= settings.idle_time
        if hot_have <= floors["hot"] or not (over_ceiling or stale):
            continue
        if not over_ceiling and level is not None and powered <= level:
            return
        if not over_ceiling and _wanted_back(run, pool, floors, hot_have - 1, node.node):
            return
        if not _room(settings.ceilings.warm, warm_have) or not run.budget.spend(pool, "park"):
            return
        why = "above the hot ceiling" if over_ceiling else f"hot {ago(run.now - node.since)} unused"
        run.add("park", pool, (node.node,), f"{node.node} {why}; hot {hot_have} above floor "
                f"{floors['hot']}: parking it warm", target_tier=WARM)
        view.free[HOT].remove(node.node)
        hot_have -= 1
        warm_have += 1
        powered = None if powered is None else powered - 1
