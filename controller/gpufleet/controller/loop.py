"""The reconcile loop: read demand and supply, ask the planner, record, act, repeat.

One pass (``Reconciler.once``) never blocks on a playbook: actions start in the actuator's
pool and finish in a later pass, which records their outcome. ``run`` repeats passes every
``interval`` seconds while this controller holds the ledger lease.
"""
import time

from gpufleet.controller import records, spool, supply
from gpufleet.controller.errors import ControllerError, LeaseHeld
from gpufleet.controller.journal import Journal

__all__ = ["Reconciler", "PassResult", "World"]

# Actions that are records, not machine work: done inline, inside the pass. reserve and
# substitute change the gang (its book is the decision log, folded by the planner's
# gangbook.fold); the member's wake or bringup comes as its own action.
_LEDGER_ONLY = ("break_fix", "reserve", "substitute")
# How far back the decision log is folded into the gangs in progress (gang deadlines are hours).
_GANG_LOOKBACK_S = 2 * 86400


class World:
    """What one pass read: Slurm's jobs, the same with pools, unservable (job, why), node views."""

    def __init__(self, raw, jobs, unservable, nodes):
        self.raw, self.jobs, self.unservable, self.nodes = raw, jobs, unservable, nodes


class PassResult:
    def __init__(self, plan=None, started=(), finished=(), error=None, jobs=(), nodes=()):
        self.plan, self.started, self.finished, self.error = plan, list(started), list(finished), error
        self.jobs, self.nodes = jobs, nodes


class Reconciler:
    """Wires a DemandSource, the ledger, the planner and an Actuator; clock injectable."""

    def __init__(self, source, ledger, planning, actuator, hosts, controller_id, clock=time.time, out=None,
                 spool_dir=None):
        self.source, self.ledger, self.planning, self.actuator = source, ledger, planning, actuator
        self.spool_dir = spool_dir
        self.hosts, self.controller_id, self.clock, self.out = hosts, controller_id, clock, out
        self.journal = Journal(ledger, controller_id)

    def _say(self, text):
        if self.out:
            self.out.write(text + "\n")
            self.out.flush()

    def read_world(self, now=None):
        """World(jobs as Slurm reports them, jobs with pools, unservable, node views); fails closed."""
        now = self.clock() if now is None else now
        raw = self.source.jobs()
        slurm_nodes = self.source.nodes()
        views = supply.node_views(self.hosts, records.node_records(self.ledger), slurm_nodes, raw, self.planning,
                                  now, history_of=self.ledger.history)
        mapped, unservable = self.planning.map_jobs(raw, views)
        return World(raw, mapped, unservable, views)

    def plan(self, now=None):
        now = self.clock() if now is None else now
        world = self.read_world(now)
        history = records.demand_history(self.ledger, since=now - 28 * 86400)
        plan = self.planning.plan(world.raw, world.nodes, self.actuator.in_flight(), self.gangs(now), now,
                                  history)
        return plan, world

    def gangs(self, now):
        """Gangs in progress: the planner's own bookkeeping rule over the recorded decisions."""
        acts = [_action_of(d) for d in records.decisions(self.ledger, since=now - _GANG_LOOKBACK_S)
                if (d.get("demand") or {}).get("action", {}).get("gang_id")]
        return self.planning.fold_gangs(acts)

    def converge(self):
        """After a restart: resume every decision a previous controller left without outcome."""
        resumed = []
        for decision in self.journal.unfinished():
            action = _action_of(decision)
            if self._start(decision["id"], action):
                resumed.append(decision["id"])
                self._say("resume decision %s: %s %s (left in flight)" % (decision["id"], action.kind,
                                                                          ",".join(action.nodes)))
        return resumed

    def once(self, dry_run=False):
        """One pass; with ``dry_run`` the plan is returned and nothing is recorded or run."""
        now = self.clock()
        finished = [] if dry_run else self._finish()
        try:
            plan, world = self.plan(now)
        except ControllerError as exc:
            self._say("pass skipped: %s" % exc)
            return PassResult(finished=finished, error=str(exc))
        jobs, views = world.jobs, world.nodes
        if dry_run:
            return PassResult(plan=plan, jobs=jobs, nodes=views)
        self.journal.demand(jobs, sorted({v.pool for v in views}), now)
        busy = self.actuator.busy_nodes()
        # Slurm's own power-saving requests first: Slurm already waits on those nodes.
        started = self._spooled(views, jobs, busy, now)
        for action in plan.actions:
            machine = action.kind not in _LEDGER_ONLY
            if machine and busy.intersection(action.nodes):
                continue   # never two machine actions on one node at once
            decision_id = self.journal.intent(action, jobs, views, now)
            if self._start(decision_id, action):
                if machine:
                    busy.update(action.nodes)
                started.append((decision_id, action))
        return PassResult(plan=plan, started=started, finished=finished, jobs=jobs, nodes=views)

    def _spooled(self, views, jobs, busy, now):
        """Carry out the power-saving requests waiting in the spool (each recorded, then removed)."""
        started = []
        states = {v.node: v.state for v in views}
        pools = {v.node: v.pool for v in views}
        for path, request in spool.pending(self.spool_dir):
            if request["kind"] == "invalid":
                self._say("spool: ignoring unreadable request %s (%s)" % (path, request.get("error")))
                spool.done(path)
                continue
            for action in spool.actions_for(request, states, pools.get):
                if busy.intersection(action.nodes):
                    continue
                decision_id = self.journal.intent(action, jobs, views, now)
                if self._start(decision_id, action):
                    busy.update(action.nodes)
                    started.append((decision_id, action))
            spool.done(path)
        return started

    def _start(self, decision_id, action):
        if action.kind in _LEDGER_ONLY:
            self._ledger_step(decision_id, action)
            return True
        from gpufleet.controller.actuator import playbook_for
        playbook, extra = playbook_for(action)
        if playbook is None:
            self.journal.outcome(decision_id, "failed: no playbook for action kind %r" % action.kind)
            return False
        if action.kind == "rollback" and records.gang_status(self.ledger, action.gang_id):
            records.gang_rollback(self.ledger, action.gang_id, action.reason)
        if action.kind == "bringup":
            self._retry_failed(decision_id, action)
        self._say("start %s %s on %s: %s" % (decision_id, action.kind, ",".join(action.nodes), action.reason))
        return self.actuator.submit(decision_id, action, playbook, extra)

    def _retry_failed(self, decision_id, action):
        """A failed node is brought up again through recycling (failed -> recycling is the
        ledger's retry edge); its failure stays in the history, so the planner counts it."""
        for node in action.nodes:
            if (self.ledger.get(node) or {}).get("state") == records.states.FAILED:
                records.transition(self.ledger, node, records.states.RECYCLING,
                                   "retry: %s" % action.reason, run_id="ctl-%s" % decision_id)

    def _ledger_step(self, decision_id, action):
        if action.kind == "break_fix":
            for node in action.nodes:
                records.transition(self.ledger, node, records.states.BREAK_FIX, action.reason,
                                   run_id="ctl-%s" % decision_id)
        self._say("record %s %s %s: %s" % (decision_id, action.kind, ",".join(action.nodes), action.reason))
        self.journal.outcome(decision_id, "ok")

    def _finish(self, wait=False):
        finished = []
        for decision_id, action, outcome in self.actuator.collect(wait=wait):
            self.journal.outcome(decision_id, outcome)
            self._say("done %s %s on %s: %s" % (decision_id, action.kind, ",".join(action.nodes), outcome))
            finished.append((decision_id, action, outcome))
        return finished

    def drain(self):
        """Wait for every running action and record its outcome (clean shutdown, `once`)."""
        return self._finish(wait=True)

    def run(self, interval, ttl_s, stop=lambda: False, wait_for_lease=True):
        """Reconcile every ``interval`` s while holding the lease; renew it each pass."""
        self.take_lease(ttl_s, wait_for_lease, stop)
        try:
            self.converge()
            while not stop():
                started = self.clock()
                renewed, holder, _exp = records.renew_lease(self.ledger, self.controller_id, ttl_s, started)
                if not renewed:
                    raise LeaseHeld("Lost the controller lease to %s; stopping without acting." % holder,
                                    holder=holder)
                self.once()
                time.sleep(max(0.0, interval - (self.clock() - started)))
        finally:
            self.drain()
            records.release_lease(self.ledger, self.controller_id)

    def take_lease(self, ttl_s, wait, stop=lambda: False, poll=2.0):
        while True:
            got, holder, expires = records.acquire_lease(self.ledger, self.controller_id, ttl_s, self.clock())
            if got:
                return
            if not wait or stop():
                raise LeaseHeld("Controller %s holds the lease until %s; only one controller acts at a time. "
                                "Stop it, or wait for the lease to expire (--wait)."
                                % (holder, records.iso(expires)), holder=holder)
            self._say("waiting: controller %s holds the lease" % holder)
            time.sleep(poll)


def _action_of(decision):
    from gpufleet.capacity.model import Action
    extra = (decision.get("demand") or {}).get("action") or {}
    return Action(kind=decision["action"], pool=decision["pool"], nodes=tuple(decision["nodes"] or ()),
                  reason=decision["reason"], job_id=decision.get("job"), gang_id=extra.get("gang_id"),
                  replaces=extra.get("replaces"), target_tier=extra.get("target_tier"),
                  deadline_at=extra.get("deadline_at"))
