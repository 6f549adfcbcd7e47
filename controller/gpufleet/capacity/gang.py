"""Gangs, all or nothing: reserve N nodes for one job, admit only when all N are hot and
validated (on exactly those nodes), replace a member that failed or missed its own deadline
with a spare of the same pool while the gang deadline allows, else roll back.

A gang is formed by a ``reserve`` action and ended by ``admit`` or ``rollback``;
gpufleet.capacity.gangbook.fold applies a plan's actions to the gangs in progress.
"""
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from gpufleet.capacity.emit import ago
from gpufleet.capacity.model import COLD, HOT, IDLE, PROVISIONING, UNAVAILABLE, WARM

__all__ = ["advance", "form", "gang_id_for"]


def gang_id_for(job, now):
    """Deterministic and new per attempt: a job rolled back and formed again gets a new id."""
    return f"{job.job_id}@{int(now)}"


# An idle member is held (drained, kept powered: seconds); its own deadline gets the warm
# estimate as margin, for a job Slurm may place there before the hold lands.
def _estimate(settings, tier):
    return {HOT: 0.0, IDLE: 0.0, WARM: settings.estimates.warm}.get(tier, settings.estimates.cold)


# Tiers whose nodes keep the image they run (a wake does not reimage); a cold node is imaged
# by its bring-up, so its recorded image says nothing yet.
_KEEPS_IMAGE = (HOT, IDLE, WARM)


def _image(view, name):
    node = view.nodes.get(name)
    return node.image_version if node is not None and node.tier in _KEEPS_IMAGE else None


def _version_for(view, tiers):
    """The image a new gang runs: the one most free hot (then warm) nodes run, by name on a
    tie; None when no such node records one. One job never spans two image versions."""
    counts = {}
    for rank, tier in enumerate(t for t in (HOT, IDLE, WARM) if t in tiers):
        for name in view.free.get(tier, ()):
            version = _image(view, name)
            if version is not None:
                counts.setdefault(version, [0, 0, 0])[rank] -= 1
    return min(counts, key=lambda v: (counts[v], v)) if counts else None


def _idle_spare(view):
    """Idle nodes a gang may hold: those pending single-node jobs will not start on."""
    return max(0, view.count(IDLE) - view.idle_claimed)


def _pick(run, pool, count, deadline, version=None):
    """Take ``count`` free nodes, fastest tier first (hot; idle, held at once; warm; cold),
    only from tiers that can be hot by ``deadline`` and, among nodes that keep their image,
    only those on one image version (``version``, else the one most of them run); None
    (nothing taken) when the pool cannot supply them all."""
    view, settings = run.views[pool], run.policy.pools[pool]
    tiers = [HOT, IDLE] + [t for t in (WARM, COLD) if run.now + _estimate(settings, t) <= deadline]
    version = version or _version_for(view, tiers)

    def fits(name):
        return version is None or _image(view, name) in (None, version)

    def usable(name):   # an idle node may run a job on part of it (MIXED): never taken
        return fits(name) and not (view.nodes[name].jobs if name in view.nodes else ())

    def available(tier):
        found = sum(1 for name in view.free.get(tier, ()) if usable(name))
        return min(found, _idle_spare(view)) if tier == IDLE else found
    if sum(available(t) for t in tiers) < count:
        return None
    picked = []
    for tier in tiers:
        take = available(tier)
        while len(picked) < count and take > 0:
            picked.append((view.take(tier, usable), tier))
            take -= 1
    return picked


def _start(run, pool, gang_id, job_id, node, tier, deadline, why):
    """Hold, wake or bring up one member; its own deadline is its tier's estimate from now."""
    if tier == HOT:
        return None
    settings = run.policy.pools[pool]
    if tier == IDLE:   # drained and kept powered: no machine action, outside the limits
        mine = min(deadline, run.now + settings.estimates.warm)
        return run.add("hold", pool, (node,), f"{why}: holding idle {node} for the gang, due by "
                       f"+{ago(mine - run.now)}", gang_id=gang_id, job_id=job_id, deadline_at=mine,
                       target_tier=HOT)
    kind = "wake" if tier == WARM else "bringup"
    if not run.budget.spend(pool, kind):
        run.note(pool, "held_back", f"gang {gang_id} member {node}: concurrency limit reached")
        return None
    mine = min(deadline, run.now + _estimate(run.policy.pools[pool], tier))
    return run.add(kind, pool, (node,), f"{why}: {_starting(run.views[pool], kind, node)}, due by "
                   f"+{ago(mine - run.now)}", gang_id=gang_id, job_id=job_id, deadline_at=mine, target_tier=HOT)


def _starting(view, kind, node):
    """What a member's wake or bring-up does, for its reason."""
    if kind == "bringup":
        return f"bringing up cold {node}"
    seen = view.nodes.get(node)
    if seen is not None and seen.state == states.HOT:   # held, its gate expired: warm to the planner (tiers.classify)
        return f"re-gating hot {node} (gate expired)"
    return f"waking parked {node}"


def _can_start(run, pool, count):
    """True when ``count`` bring-ups fit the limits now, or could never fit at once (then the
    gang starts what it can and the rest follow); False: wait rather than hoard nodes."""
    budget, settings = run.budget, run.policy.pools[pool]
    if count > min(settings.max_concurrent_bringups, run.policy.fleet.concurrency_limit):
        return True
    return count <= min(budget.pool_left[pool], budget.fleet_left)


def form(run, pool, job):
    """Reserve nodes for a pending gang job, start the ones not hot, admit when all are hot."""
    settings = run.policy.pools[pool]
    deadline = run.now + settings.gang_deadline
    view = run.views[pool]
    if not _can_start(run, pool, job.nodes - view.count(HOT) - _idle_spare(view)):
        run.note(pool, "gang_waiting", f"job {job.job_id} needs {job.nodes} nodes: waiting for "
                 "the concurrency limits to start its bring-ups together")
        return
    picked = _pick(run, pool, job.nodes, deadline)
    if picked is None:
        run.note(pool, "gang_waiting", f"job {job.job_id} needs {job.nodes} nodes; pool {pool} "
                 f"cannot have them hot within the gang deadline {ago(settings.gang_deadline)}")
        return
    gang_id = gang_id_for(job, run.now)
    nodes = tuple(node for node, _ in picked)
    hot = sum(1 for _, tier in picked if tier == HOT)
    idle = sum(1 for _, tier in picked if tier == IDLE)
    why = f"gang job {job.job_id} needs {job.nodes} nodes of pool {pool}"
    run.add("reserve", pool, nodes, f"{why}: reserving {', '.join(nodes)} ({hot} hot"
            f"{', %d idle' % idle if idle else ''}), "
            f"deadline +{ago(settings.gang_deadline)}", gang_id=gang_id, job_id=job.job_id,
            deadline_at=deadline)
    for node, tier in picked:
        _start(run, pool, gang_id, job.job_id, node, tier, deadline, why)
    if hot == job.nodes:
        run.add("admit", pool, nodes, f"{why}: all {job.nodes} reserved nodes are hot and "
                "validated: admitting them together", gang_id=gang_id, job_id=job.job_id)


def _gang_version(members):
    """The image most of the gang's hot and warm members run (by name on a tie), or None."""
    counts = {}
    for _m, node in members:
        if node is not None and node.tier in _KEEPS_IMAGE and node.image_version is not None:
            counts[node.image_version] = counts.get(node.image_version, 0) + 1
    return min(counts, key=lambda v: (-counts[v], v)) if counts else None


def _trouble(run, member, node, version=None, on_its_way=False, check_deadline=True):
    """Why a member must be replaced, or None while it is fine. ``on_its_way``: its wake or
    bring-up is still running: until it ends, Slurm's view of it (DOWN while it boots) is no
    sign of trouble, and one that passed its gate (ready) is minutes ahead of any spare."""
    if node is None:
        return f"{member.node} is no longer in the pool"
    if on_its_way and node.state in (states.READY, states.HOT):
        return None
    if node.tier == UNAVAILABLE and not (on_its_way and node.state != states.FAILED):
        return f"{member.node} is {node.state}"
    if version and node.tier in _KEEPS_IMAGE and node.image_version not in (None, version):
        return (f"{member.node} runs image {node.image_version}, the gang runs {version} "
                "(one job never spans two image versions)")
    if check_deadline and node.tier != HOT and run.now > member.deadline_at:
        return f"{member.node} missed its own deadline by {ago(run.now - member.deadline_at)}"
    return None


def advance(run, pool, gang, job):
    """One step for a gang in progress: admit, substitute, start waiting members, or roll back."""
    view = run.views[pool]
    members = [(m, view.nodes.get(m.node)) for m in gang.members]
    why = f"gang {gang.gang_id} (job {gang.job_id}, {gang.size} nodes)"
    if job is None:
        return _rollback(run, pool, gang, members, f"{why}: the job is no longer pending")
    version = _gang_version(members)
    troubles = [(m, _trouble(run, m, n, version, m.node in view.in_flight)) for m, n in members]
    troubles = [(m, t) for m, t in troubles if t]
    # A member past its own deadline whose wake or bring-up still runs may yet make it: it is
    # replaced when spares can be had, and waited for when none can. Only members that cannot
    # make it at all (failed, gone, another image) roll the gang back when no spare is left.
    late = [(m, t) for m, t in troubles if m.node in view.in_flight
            and _trouble(run, m, view.nodes.get(m.node), version, True, check_deadline=False) is None]
    if late and run.now < gang.deadline_at and run.policy.pools[pool].gang_substitution:
        waiting = {m.node for m, _ in late}
        troubles = [(m, t) for m, t in troubles if m.node not in waiting]
    else:
        late = []
    if not troubles and all(n.tier == HOT for _, n in members):
        return run.add("admit", pool, tuple(m.node for m in gang.members),
                       f"{why}: all members hot and validated: admitting them together",
                       gang_id=gang.gang_id, job_id=gang.job_id)
    if run.now >= gang.deadline_at:
        return _rollback(run, pool, gang, members, f"{why}: gang deadline passed with "
                         f"{sum(1 for _, n in members if n and n.tier == HOT)} of {gang.size} hot")
    if troubles and not run.policy.pools[pool].gang_substitution:
        trouble = "; ".join(t for _, t in troubles)
        return _rollback(run, pool, gang, members, f"{why}: {trouble}; substitution is off "
                         f"(gang_substitution: false)")
    if troubles and not _substitute(run, pool, gang, troubles, why, version):
        trouble = "; ".join(t for _, t in troubles)
        return _rollback(run, pool, gang, members, f"{why}: {trouble}; not enough spares "
                         f"(needs {len(troubles)}) can be hot before the gang deadline")
    if late and not _substitute(run, pool, gang, late, why, version, all_or_none=False):
        run.note(pool, "gang_waiting", f"{why}: waiting for {', '.join(m.node for m, _ in late)} "
                 "(past its own deadline, still on its way; no spare can be hot before the gang deadline)")
    replaced = {m.node for m, _ in troubles}
    _start_waiting(run, pool, gang, [(m, n) for m, n in members if m.node not in replaced], why)
    return None


def _substitute(run, pool, gang, troubles, why, version=None, all_or_none=True):
    """Replace every member in trouble, or none (then the caller rolls back); with
    ``all_or_none`` false, as many as spares allow (False: none could be replaced)."""
    picked = _pick(run, pool, len(troubles), gang.deadline_at, version)
    count = len(troubles) - 1
    while picked is None and not all_or_none and count > 0:   # _pick takes nothing when it fails
        picked, count = _pick(run, pool, count, gang.deadline_at, version), count - 1
    if picked is None:
        return False
    settings = run.policy.pools[pool]
    for (member, trouble), (spare, tier) in zip(troubles, picked):
        mine = min(gang.deadline_at, run.now + _estimate(settings, tier))
        run.add("substitute", pool, (spare,), f"{why}: {trouble}: replacing it with {tier} "
                f"spare {spare}", gang_id=gang.gang_id, job_id=gang.job_id,
                replaces=member.node, deadline_at=mine)
        _start(run, pool, gang.gang_id, gang.job_id, spare, tier, gang.deadline_at,
               f"{why}: spare for {member.node}")
    return True


def _start_waiting(run, pool, gang, members, why):
    """Members the limits held back earlier (still warm or cold, nothing in flight)."""
    view = run.views[pool]
    for member, node in members:
        if node.tier in (WARM, COLD) and member.node not in view.in_flight:
            _start(run, pool, gang.gang_id, gang.job_id, member.node, node.tier,
                   gang.deadline_at, f"{why}: member waiting to start")


def _rollback(run, pool, gang, members, why):
    """Admit nothing. Healthy members that are hot or on their way go back to warm (parked);
    members never started are released as they are; failed ones stay out."""
    moving = run.views[pool].in_flight
    to_park = tuple(m.node for m, n in members if n is not None and n.tier != UNAVAILABLE
                    and (n.tier in (HOT, PROVISIONING) or m.node in moving))
    released = len(members) - len(to_park)
    return run.add("rollback", pool, to_park, f"{why}: rolling back, nothing admitted; "
                   f"{len(to_park)} member(s) back to warm, {released} released as they are",
                   gang_id=gang.gang_id, job_id=gang.job_id, target_tier=WARM)
