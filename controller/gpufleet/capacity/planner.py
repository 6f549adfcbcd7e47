"""plan(demand, supply, policy, now, history) -> Plan: the capacity controller's one decision.

Pure and deterministic: the same inputs give the same actions in the same order. The
controller and the simulator both call it. Steps, each over all pools in policy order so the
fleet's concurrency budget goes to the most urgent work first:

1. break_fix for nodes that failed ``failures_before_break_fix`` times in a row;
2. gangs in progress (admit, substitute, start, roll back), then new gangs (reserve);
3. reactive: pending single-node jobs idle nodes cannot serve;
4. scale-down of long-idle joined nodes (held hot or parked warm), before the floors so a
   held node spares a wake; with a forecast, the supply is counted once first (joined, on its
   way for pending jobs or gangs) and each node released comes off that count, so the forecast
   floor it raises is met by holding the node instead of parking and waking it again;
5. proactive: the hot and warm floors in force (base, schedule, forecast);
6. surplus hot nodes (above the floor and unused, or above the ceiling) parked; with
   ``steady``, nodes the steady level keeps powered are neither parked in 4 nor here, the
   nodes below the level are woken in one batch and free hot nodes above the hot floor are
   resumed to joined (gpufleet.capacity.steady);
7. fabric companions: bring-ups too few for the gate's fabric phase, with no known-good node
   of the pool free to measure with, get companions from cold (one playbook run validates
   them together; alone they would fail the gate for want of a peer).
"""
from bisect import insort

from gpufleet.capacity.budget import Budget
from gpufleet.capacity.demand import map_jobs
from gpufleet.capacity.emit import Pass, warm_up
from gpufleet.capacity.fill import proactive, reactive
from gpufleet.capacity.floors import PoolFloors
from gpufleet.capacity.gang import advance, form
from gpufleet.capacity.model import BUSY, COLD, HOT, IDLE, PROVISIONING, TIERS, WARM, Plan
from gpufleet.capacity.scaledown import park_surplus_hot, release_idle
from gpufleet.capacity.steady import powered_now, steady_level
from gpufleet.capacity.view import build_views

__all__ = ["plan"]


def plan(demand, supply, policy, now, history=None, index=None, forecasters=None):
    """Decide this pass's actions. ``history``: {pool: DemandSample sequence sorted by minute}
    for the forecast (None: no forecast input). ``forecasters``: {pool: fitted LearnedForecaster}
    for pools with ``forecast.method: learned`` (fitted outside the pass; only predicted here).
    ``index``: a NodeIndex (gpufleet.capacity.node_index) the caller keeps between its passes
    so unchanged nodes are not sorted again; the plan is the same with or without it."""
    views = build_views(policy, supply, index)
    mapped = map_jobs(demand, policy, supply, {name: v.members for name, v in views.items()})
    run = Pass(policy=policy, now=float(now), views=views, budget=Budget(policy, views))
    pending = _pending_by_pool(mapped, policy)
    floors = {name: _floors(run, name, history, forecasters) for name in policy.pools}
    # A gang's job may be held on purpose while its nodes come up (the controller's way of
    # admitting it); held or not, a pending job keeps its gang.
    waiting = {job.job_id: job for job in mapped.jobs if job.state == "PENDING"}
    for name in policy.pools:
        _break_fix(run, name)
    for name in policy.pools:
        _gangs(run, name, supply, pending[name], waiting)
    have = {name: _after_reactive(run, name, _singles(pending[name])) for name in policy.pools}
    for name in policy.pools:
        _commit(run, name, floors[name], have[name][0])
    for name in policy.pools:
        _steady(run, name, floors[name], history, pending[name])
    for name in policy.pools:
        have[name] = release_idle(run, name, floors[name], *have[name])
    for name in policy.pools:
        have[name] = proactive(run, name, floors[name], *have[name])
    for name in policy.pools:
        _steady_fill(run, name, floors[name])
    for name in policy.pools:
        park_surplus_hot(run, name, floors[name], *have[name])
        run.notes[name]["floors"] = floors[name].why()
    for name in policy.pools:
        _fabric_companions(run, name)
    for name in policy.pools:
        _summarise(run, name, pending[name])
    run.notes["unservable"] = [{"job_id": job.job_id, "reason": reason}
                               for job, reason in mapped.unservable]
    return Plan(actions=tuple(run.actions), notes=run.notes)


def _fabric_companions(run, name):
    """Bring-ups of this pass fewer than ``fabric_test_nodes`` and no hot or idle node of the
    pool free (the launcher offers those as fabric peers): bring up more cold nodes with them,
    same target, within the limits. Nodes on their way do not count: they are not validated
    when this pass's run reaches its fabric phase. When the limits cannot give all the
    companions now, the short bring-ups wait for a later pass instead of failing the gate
    alone; with too few cold nodes, or limits below the set size, they never could, and go
    alone. The planner sees pools, not fabric sets: a pool spanning several sets may still
    come up short; the gate says so."""
    settings = run.policy.pools[name]
    size = settings.fabric_test_nodes
    # the launcher runs each target tier's bring-ups as their own run (to hot, to warm: bring
    # up then park), so each run needs its own set
    runs = {}
    for action in run.actions:
        if action.pool == name and action.kind == "bringup":
            runs.setdefault(action.target_tier, []).append(action)
    short = [mine for mine in runs.values() if sum(len(a.nodes) for a in mine) < size]
    if not short:
        return
    view = run.views[name]
    # what the launcher offers: hot or idle, running nothing, no node operation under way
    # (reserve is a record: a gang's hot members stay peers until their admission); idle
    # nodes pending jobs will start on (idle_claimed) are busy by then
    acted = {n for a in run.actions if a.pool == name and a.kind != "reserve" for n in a.nodes}
    free = {HOT: 0, IDLE: 0}
    for n, v in view.nodes.items():
        if v.tier in free and not v.jobs and n not in acted and n not in view.in_flight:
            free[v.tier] += 1
    if free[HOT] + max(0, free[IDLE] - view.idle_claimed) > 0:
        return
    for mine in short:
        _companions_for(run, name, mine, size - sum(len(a.nodes) for a in mine))


def _companions_for(run, name, mine, want):
    """``want`` more cold bring-ups beside ``mine`` (one target tier's bring-ups), or wait."""
    settings, view = run.policy.pools[name], run.views[name]
    size, first = settings.fabric_test_nodes, mine[0]
    budget, cold = run.budget, len(view.free.get(COLD) or ()) + len(view.retryable)
    limits_fit = min(settings.max_concurrent_bringups, run.policy.fleet.concurrency_limit) >= size
    on_the_way = sorted(view.bringing)
    if cold < want and limits_fit and on_the_way:
        # alone it fails the fabric phase and counts toward break_fix; a node on its way is
        # a known-good peer once validated (the lab lost a healthy node to break_fix this way)
        _withdraw(run, name, mine, f"fabric peer for {first.nodes[0]}: {cold} cold node(s) free, "
                  f"{len(on_the_way)} on the way ({', '.join(on_the_way[:3])}): waiting for a validated peer")
        return
    if cold < want or not limits_fit:
        run.note(name, "held_back", f"fabric peer for {first.nodes[0]}: {cold} cold node(s) free, "
                 f"limits {settings.max_concurrent_bringups}/{run.policy.fleet.concurrency_limit}, "
                 f"fabric set size {size}: it comes up alone")
        return
    if budget.room(name, "bringup") < want:
        _withdraw(run, name, mine, f"fabric peers for {first.nodes[0]}: {want} more bring-up(s) needed "
                  f"to validate with it and the limits allow {budget.room(name, 'bringup')} now: waiting "
                  "for a later pass")
        return
    for _ in range(want):
        sources = view.free.get(COLD) or view.retryable
        budget.spend(name, "bringup")
        node = sources.pop(0)
        run.add("bringup", name, (node,), f"fabric peer for {first.nodes[0]}: the gate measures the fabric "
                f"over {size} nodes and no known-good node of pool {name} is free: bringing up {node} with it",
                target_tier=first.target_tier, job_id=None)


def _withdraw(run, name, actions, why):
    """Take back bring-ups decided this pass: their nodes free again, their budget returned."""
    view = run.views[name]
    for action in actions:
        run.actions.remove(action)
        for node in action.nodes:
            run.budget.refund(name, "bringup")
            home = view.free.setdefault(COLD, []) if view.nodes[node].tier == COLD else view.retryable
            insort(home, node)
    run.note(name, "held_back", why)


def _pending_by_pool(mapped, policy):
    pending = {name: [] for name in policy.pools}
    for job in mapped.pending_all():
        pending[job.pool].append(job)
    return pending


def _after_reactive(run, name, singles):
    """Serve pending single-node jobs -> (hot nodes had or on the way, nodes on their way to
    warm)."""
    spare_incoming = reactive(run, name, singles)
    view = run.views[name]
    return view.count(HOT) + spare_incoming, view.incoming_warm


def _singles(jobs):
    return [job for job in jobs if not job.gang]


def _floors(run, name, history, forecasters=None):
    view = run.views[name]
    joined = view.count(BUSY) + view.count(IDLE)
    samples = (history or {}).get(name, ())
    floors = PoolFloors(run.policy.pools[name], run.now, samples, joined, hold=True,
                        model=(forecasters or {}).get(name))
    run.notes.setdefault(name, {})["floors"] = floors.why()
    return floors


def _steady(run, name, floors, history, jobs):
    """The steady powered level of this pass (None without ``steady``), kept on ``floors``."""
    view = run.views[name]
    demand_nodes = view.tiers.get(BUSY, 0) + sum(job.nodes for job in jobs)
    level, why = steady_level(run.policy.pools[name], (history or {}).get(name, ()), run.now, demand_nodes,
                              view.members, powered_now(run, name))
    floors.steady_level = level
    if level is not None:
        run.notes[name]["steady"] = why


def _steady_fill(run, name, floors):
    """Wake the nodes below the steady level together; resume free hot nodes above the hot
    floor so jobs start on them at once (a held node would make each arrival wait a resume);
    a joined node above the level parks once idle for the idle time, like any other."""
    level = floors.steady_level
    if level is None:
        return
    view, powered = run.views[name], powered_now(run, name)
    for _ in range(level - powered):
        why = f"pool {name} steady level {level}: {powered} node(s) powered"
        if warm_up(run, name, why) is None:
            break
        powered += 1
    while view.count(HOT) > floors["hot"]:
        node = view.take(HOT)
        run.add("resume", name, (node,), f"{node} hot above the hot floor {floors['hot']} (steady "
                f"level {level}): joining it so jobs start on it at once")


def _commit(run, name, floors, hot_have):
    """With a forecast: the pool's supply committed to demand, counted once for this pass:
    joined nodes (busy, idle), nodes resuming or on their way for pending jobs, and gang members
    not joined yet. The forecast asks for what it wants beyond these; ``hot_have`` (free hot and
    spare incoming) fills that floor."""
    if floors.wanted is None:
        return
    view = run.views[name]
    joined = sum(1 for node in view.nodes.values() if node.tier in (BUSY, IDLE))
    members = set(view.reserved)
    for action in run.actions:
        if action.pool == name and action.kind == "reserve":
            members.update(action.nodes)
    gang = sum(1 for n in members if n in view.nodes and view.nodes[n].tier in (HOT, WARM, COLD, PROVISIONING))
    spare = hot_have - view.count(HOT)
    for_jobs = view.resuming + max(0, view.incoming_hot - spare) + sum(
        len(a.nodes) for a in run.actions
        if a.pool == name and a.job_id is not None and a.gang_id is None and a.kind in ("wake", "bringup", "resume"))
    floors.committed = joined + gang + for_jobs
    floors.committed_by = {"joined": joined, "gang_members": gang, "for_pending_jobs": for_jobs}
    run.notes[name]["floors"] = floors.why()


def _break_fix(run, name):
    """Failed nodes at the limit go to a human; the others stay retryable (as cold)."""
    view, limit = run.views[name], run.policy.pools[name].failures_before_break_fix
    for node_name in list(view.retryable):
        node = view.nodes[node_name]
        if node.consecutive_failures >= limit:
            view.retryable.remove(node_name)
            run.add("break_fix", name, (node_name,), f"{node_name} failed "
                    f"{node.consecutive_failures} times in a row (limit {limit}): handing it "
                    "to a human instead of retrying")


def _gangs(run, name, supply, jobs, waiting):
    formed = set()
    # An admission or rollback under way decides the gang: while admit runs, Slurm already
    # runs the job (so it is no longer pending) before the ledger records the members joined;
    # judging the gang then would roll back the gang that is starting.
    deciding = {a.gang_id for a in supply.in_flight if a.kind in ("admit", "rollback") and a.gang_id}
    for gang in sorted((g for g in supply.gangs if g.pool == name), key=lambda g: g.gang_id):
        formed.add(gang.job_id)
        if gang.gang_id not in deciding:
            advance(run, name, gang, waiting.get(gang.job_id))
    view = run.views[name]
    view.idle_claimed = min(view.count(IDLE), len(_singles(jobs)))
    for job in jobs:
        if not job.gang or job.job_id in formed:
            continue
        if view.count(IDLE) - view.idle_claimed >= job.nodes:
            view.idle_claimed += job.nodes   # Slurm starts it on idle nodes by itself
            continue
        form(run, name, job)


def _summarise(run, name, jobs):
    view = run.views[name]
    run.notes[name]["supply"] = {tier: view.tiers.get(tier, 0) for tier in TIERS}
    run.notes[name]["demand"] = {"pending_jobs": len(jobs),
                                 "pending_gang_jobs": sum(1 for j in jobs if j.gang),
                                 "pending_nodes": sum(j.nodes for j in jobs)}
    run.notes[name]["in_flight"] = {"bringups": len(view.bringing), "parks": len(view.parking)}
