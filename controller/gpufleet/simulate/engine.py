"""The simulation loop: trace samples in, planner passes, actions with latencies, metrics out.

Per trace sample (the step: one minute for per-minute traces) at time t:
1. jobs follow the sample's demand (gpufleet.simulate.workload); finished jobs free nodes;
2. the scheduler starts what fits on idle nodes;
3. one planning pass: ``plan(demand, supply, policy, t, history)``, its actions applied;
4. operations finish at their sampled times before the next sample; after each, the
   controller's next tick (``interval`` seconds, 10 by default as in ``gpufleet controller
   run``) runs another planning pass, as the real loop would notice the change then.
History is what the controller records in the ledger each minute (pool, minute, GPUs running,
pending, pending for lack of capacity) as {pool: [DemandSample]} oldest first; ``prior`` adds
demand recorded before the replayed window (the forecast's lookback). Gangs in progress are
kept with the planner's own bookkeeping (gpufleet.capacity.gangbook.fold), as the controller
keeps them in the ledger.
"""
from dataclasses import replace
from functools import partial

from gpufleet.capacity import model
from gpufleet.capacity.gangbook import fold
from gpufleet.capacity.model import Demand, DemandSample, Supply
from gpufleet.capacity.tiers import gate_valid
from gpufleet.simulate import actions, completions, scheduler
from gpufleet.simulate.fleet import Fleet
from gpufleet.simulate.metrics import Metrics
from gpufleet.simulate.clock import Clock
from gpufleet.simulate.workload import Workload

__all__ = ["Simulation", "default_plan"]


def default_plan():
    """The planner with a NodeIndex of its own: between two passes only the nodes that changed
    are sorted again (the plan is the same; gpufleet.capacity.node_index)."""
    from gpufleet.capacity.node_index import NodeIndex
    from gpufleet.capacity.planner import plan
    return partial(plan, index=NodeIndex())


class Simulation:
    def __init__(self, trace, policy, latency, pool, nodes, gpus_per_node=8, interval=10.0,
                 initial_tier=model.WARM, partition="", plan=None, prior=(), forecasters=None):
        self.trace, self.policy, self.latency = trace, policy, latency
        # fitted learned forecasters by pool, handed to every pass (none: plan() as before)
        self._plan_extra = {"forecasters": forecasters} if forecasters else {}
        self.pool, self.gpn, self.interval = pool, gpus_per_node, interval
        # The pool's gate_validity (s): when a hot or parked node's gate goes stale. None (no
        # policy object, as in bookkeeping tests): gates never go stale.
        pools = getattr(policy, "pools", None) or {}
        self.gate_validity = pools[pool].gate_validity if pool in pools else None
        self.plan = plan or default_plan()
        start = trace.times[0]
        self.clock = Clock(start)
        self.fleet = Fleet(pool, nodes, gpus_per_node, initial_tier, start, on_hot=self._on_hot)
        self.metrics = Metrics(self.fleet, start)
        self.fleet.on_change = self.metrics.advance
        self.workload = Workload(gpus_per_node, pool, partition)
        self.history = {pool: [DemandSample(pool, float(m), gpus_running=g) for m, g in prior]}
        self.gangs = ()
        self.in_flight = {}          # id(action) -> [action, node names still under way]
        self._in_flight_view = ()
        self._ticks = set()
        self.plans = 0
        for node in self.fleet.nodes:
            if node.tier == model.HOT:
                self._on_hot(node, start)
        self._warm_start(start)

    def _warm_start(self, start):
        """Demand already running at the first sample runs from the start (no wait, no history)."""
        self.workload.update(start, self.trace.gang_gpus[0], self.trace.small_gpus[0])
        for job in list(self.workload.pending()):
            free = [n for n in self.fleet.nodes if n.tier not in (model.BUSY, model.UNAVAILABLE)]
            if job.nodes <= len(free):
                scheduler.start_job(self, job, free[:job.nodes], start)
        self.metrics.classify(start, self.workload.pending())

    def _on_hot(self, node, now):
        """Schedule the moment a hot node's gate goes stale (the pool's gate_validity)."""
        if self.gate_validity is None:
            return
        if not gate_valid(node.gate_passed_at, self.gate_validity, now):
            self.fleet.expire(node, now)
        else:
            self.clock.at(node.gate_passed_at + self.gate_validity + 1e-6, "expired", (None, node, node.op))

    def track(self, action, node, started):
        """An operation of ``action`` on ``node`` started or finished."""
        entry = self.in_flight.setdefault(id(action), [action, set()])
        if started:
            entry[1].add(node)
        else:
            entry[1].discard(node)
            if not entry[1]:
                del self.in_flight[id(action)]
        self._in_flight_view = None

    def _in_flight(self):
        """Actions under way, each narrowed to the nodes whose operation has not finished."""
        views = []
        for action, nodes in self.in_flight.values():
            if len(nodes) == len(action.nodes):
                views.append(action)
            else:
                views.append(replace(action, nodes=tuple(n for n in action.nodes if n in nodes)))
        return tuple(views)

    def inputs(self):
        """What the controller would hand the planner now: (demand, supply, history)."""
        if self._in_flight_view is None:
            self._in_flight_view = self._in_flight()
        supply = Supply(nodes=self.fleet.views(), in_flight=self._in_flight_view, gangs=self.gangs)
        return Demand(jobs=self.workload.jobs()), supply, self.history

    def step(self, now):
        """One planning pass at ``now`` with the simulator's inputs; applies and returns the Plan."""
        demand, supply, history = self.inputs()
        result = self.plan(demand, supply, self.policy, now, history=history, **self._plan_extra)
        self.plans += 1
        applied = [action for action in result.actions if actions.apply(self, action, now)]
        if self.gangs or any(action.gang_id for action in applied):
            self.gangs = fold(self.gangs, applied)
        return result

    def _settle(self, now):
        scheduler.schedule(self, now)
        self.metrics.classify(now, self.workload.pending())

    def _record(self, now, demand_gpus):
        pending = sum(job.gpus for job in self.workload.pending())
        running = demand_gpus - pending     # the workload follows the sample's levels exactly
        samples = self.history[self.pool]
        minute = float(int(now) // 60 * 60)
        if samples and samples[-1].minute == minute:    # sub-minute traces: the minute's last sample
            samples.pop()
        samples.append(DemandSample(self.pool, minute, running, pending, pending))
        self.metrics.sample(now, demand_gpus)

    def _sample(self, index, now, end):
        released, _ = self.workload.update(now, self.trace.gang_gpus[index], self.trace.small_gpus[index])
        scheduler.release(self, released, now)
        self._settle(now)
        self.step(now)
        self._settle(now)
        self._record(now, self.trace.gang_gpus[index] + self.trace.small_gpus[index])
        while True:
            event = self.clock.pop_before(end)
            if event is None:
                return
            kind, payload = event
            at = self.clock.now
            if kind == "tick":
                self._ticks.discard(at)
                self.step(at)
            else:
                completions.complete(self, kind, payload, at)
                if kind != "expired":
                    self._queue_tick(now, at, end)
            self._settle(at)

    def _queue_tick(self, start, at, end):
        if self.interval <= 0:
            return
        tick = start + self.interval * (int((at - start) // self.interval) + 1)
        if tick < end and tick not in self._ticks:
            self._ticks.add(tick)
            self.clock.at(tick, "tick")

    def run(self):
        """Replay the whole trace; returns the metrics summary."""
        times = self.trace.times
        for index, now in enumerate(times):
            end = times[index + 1] if index + 1 < len(times) else now + self.trace.step
            self._sample(index, now, end)
        end = times[-1] + self.trace.step
        jobs = list(self.workload.finished) + [j for s in self.workload.stacks.values() for j in s]
        summary = self.metrics.summary(end, jobs)
        summary["planning_passes"] = self.plans
        return summary
