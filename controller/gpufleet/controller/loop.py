"""The reconcile loop: read demand and supply, ask the planner, record, act, repeat.

One pass (``Reconciler.once``) never blocks on a playbook: actions start in the actuator's
pool and finish in a later pass, which records their outcome. ``run`` repeats passes every
``interval`` seconds while this controller holds the ledger lease.
"""
import time

from dataclasses import replace

from gpufleet.capacity.model import UNAVAILABLE
from gpufleet.controller import breakfix, images, inventory, learning, logs, records, rollouts, spool, supply
from gpufleet.controller.planning import samples as demand_samples
from gpufleet.controller.errors import ControllerError, LeaseHeld
from gpufleet.controller.journal import Journal
from gpufleet.controller.launch import Launcher
from gpufleet.controller.sampling import SampleRecorder
from gpufleet.day2 import bindings, rollout_stage, stage
from gpufleet.day2.cases import NOT_STARTED, fold_cases
from gpufleet.work import codec, folds, kinds
from gpufleet.work.action import REPAIR, Action

__all__ = ["Reconciler", "PassResult", "World"]

DAY2_HELD = "day2"   # the state the planner sees for a node day-2 holds
DEMAND_HISTORY_S = 28 * 86400.0     # the demand history the forecasts read and the learned model is fitted on


class World:
    """What one pass read: Slurm's jobs, the same with pools, unservable (job, why), node views,
    the ledger's rollout rows (oldest first: the pool images and the rollout book both use them)."""

    def __init__(self, raw, jobs, unservable, nodes, rollout_rows=()):
        self.raw, self.jobs, self.unservable, self.nodes = raw, jobs, unservable, nodes
        self.supply = nodes      # the node views the planner gets: held nodes unavailable (plan())
        self.rollout_rows = list(rollout_rows)
        self.day2, self.cases = stage.Day2Pass(), {}
        self.rollout, self.rollouts = rollout_stage.RolloutPass(), []


class PassResult:
    def __init__(self, plan=None, started=(), finished=(), error=None, jobs=(), nodes=()):
        self.plan, self.started, self.finished, self.error = plan, list(started), list(finished), error
        self.jobs, self.nodes = jobs, nodes


class Reconciler:
    """Wires a DemandSource, the ledger, the planner and an Actuator; clock injectable."""

    def __init__(self, source, ledger, planning, actuator, hosts, controller_id, clock=time.time, out=None,
                 spool_dir=None, report_dir=None):
        self.source, self.ledger, self.planning, self.actuator = source, ledger, planning, actuator
        self.spool_dir = spool_dir
        self.report_dir = report_dir     # gate reports are read and break_fix records written here
        self.hosts, self.controller_id, self.clock, self.out = hosts, controller_id, clock, out
        # out: a logs.Log (text or JSON lines, secrets masked) or a stream (text lines)
        self._stream_log = None
        self.journal = Journal(ledger, controller_id)
        self.launcher = Launcher(ledger, planning, actuator, self.journal, clock, self._say,
                                 fabric_set_of=lambda node: getattr(self.hosts.get(node), "fabric_set", ""),
                                 image_vars=self._image_vars)
        self.pool_images = {}          # {pool: version} after finished rollouts (read each pass)
        self._said_images = set()
        # day-2 persistence tracks: read from the ledger on the first pass, stored when they change,
        # so a restarted controller counts on from where the last one stopped
        self._tracks = None
        self.redfish = None          # optional: callable(views, now) -> day-2 Signals (gpufleet.controller.bmc)
        self.health = None           # optional: the same for the idle health check (gpufleet.controller.health)
        self.catalogue = None        # optional: gpufleet.controller.images.Catalogue (rollout/renewal recycles)
        self.image_features = None   # optional: callable(slurm_nodes, now) (gpufleet.controller.image_features)
        # Slurm's node states for the fleet view's seam, written when they change.
        self.samples, self._slurm_nodes = SampleRecorder(), {}
        # optional: waiting(holder), ready(), passed(result, started, ended), stopping(), stopped()
        # (systemd notify, liveness metrics, retention: gpufleet.controller.service)
        self.hooks = None
        # learned forecasters, fitted from the ledger's demand history outside the pass
        self.learning = learning.Models(clock=clock, say=self._say)

    def _say(self, text, level="info", **fields):
        """One log line; ``fields`` (decision, kind, pool, nodes, outcome...) go to its JSON form."""
        log = self.out
        if not log:
            return
        if not isinstance(log, logs.Log):
            if self._stream_log is None or self._stream_log.stream is not log:
                self._stream_log = logs.Log(log)
            log = self._stream_log
        log(text, level, **fields)

    def read_world(self, now=None):
        """World(jobs as Slurm reports them, jobs with pools, unservable, node views); fails closed."""
        now = self.clock() if now is None else now
        raw = self.source.jobs()
        slurm_nodes = self._slurm_nodes = self.source.nodes()
        rollout_rows = records.rollouts(self.ledger)    # the pass's one read of the rollouts table
        self.pool_images = self._usable_pool_images(rollout_rows)
        views = supply.node_views(self.hosts, records.node_records(self.ledger), slurm_nodes, raw, self.planning,
                                  now, history_of=self.ledger.history, pool_images=self.pool_images)
        mapped, unservable = self.planning.map_jobs(raw, views)
        return World(raw, mapped, unservable, views, rollout_rows)

    def _usable_pool_images(self, rollout_rows):
        """{pool: version} its last finished rollout left (images.pool_versions), only where the
        catalogue can install that version: a hot or parked node on another version is then
        cold and its bring-up installs the pool's version. Without a catalogue nothing is
        compared (said once): the variable files' version is installed as before."""
        found = images.pool_versions(rollout_rows)
        usable = {}
        for pool, version in sorted(found.items()):
            why = "no image catalogue is given to the controller" if self.catalogue is None else None
            if why is None:
                try:
                    self.catalogue.resolve(version)
                except ControllerError as exc:
                    why = exc.msg
            if why is None:
                usable[pool] = version
            elif (pool, why) not in self._said_images:
                self._said_images.add((pool, why))
                self._say("pool %s: its last rollout left image %s, but %s: bring-ups install the variable "
                          "files' version and parked nodes are not compared" % (pool, found[pool], why))
        return usable

    def _image_vars(self, pool):
        """The playbook variables installing the pool's image (none: the variable files')."""
        version = self.pool_images.get(pool)
        return self.catalogue.resolve(version) if version else {}

    def plan(self, now=None, commit=False):
        """The capacity plan after the day-2 stage; nodes day-2 holds are no supply for it.

        ``commit`` keeps the day-2 persistence tracks for the next pass (not on a dry run)."""
        now = self.clock() if now is None else now
        world = self.read_world(now)
        # one read of the decision log per pass: day-2 cases look back further than gangs
        recent = records.decisions(self.ledger, since=now - folds.LOOKBACK_S)
        book = rollouts.read_book(self.ledger, world, now, recent)
        self.day2(world, now, commit, decisions=recent, also_out=rollouts.out_by_pool(book))
        rollouts.plan(world, now, book, self.planning.pools(), self.catalogue, self.actuator.busy_nodes(),
                      self.actuator.lent_peers(), inventory.fabric_places(self.hosts), self._say)
        history = demand_samples(records.demand_history(self.ledger, since=now - DEMAND_HISTORY_S))
        forecasters = self.forecasters(history, now)
        # state 'day2' too: the planner retries or breaks a 'failed' node itself (its own bring-up
        # failures), and a node day-2 holds (repair, rollout, renewal) is not its to touch
        held = world.day2.claimed | world.rollout.claimed
        supply_nodes = [replace(v, tier=UNAVAILABLE, state=DAY2_HELD) if v.node in held else v
                        for v in world.nodes]
        world.supply = supply_nodes     # the launcher offers fabric peers from these, never a held node
        # a requeued job waiting for its replacement's bind is day-2's (gpufleet.day2.bindings)
        demand = [j for j in world.raw if j.job_id not in world.day2.awaiting_bind]
        plan = self.planning.plan(demand, supply_nodes, self.actuator.in_flight(), self.gangs(now, recent), now,
                                  history, forecasters)
        return plan, world

    def forecasters(self, history=None, now=None):
        """{pool: learned model or learned.Unfitted} for the pools with a learned forecast, fitted
        outside the pass (gpufleet.controller.learning); ``history`` read when not given."""
        now = self.clock() if now is None else now
        if history is None:
            history = demand_samples(records.demand_history(self.ledger, since=now - DEMAND_HISTORY_S))
        return self.learning.forecasters(self.planning.policy, history, now)

    def day2(self, world, now, commit=False, decisions=None, also_out=None):
        """Run the day-2 stage on what the pass read; sets ``world.day2`` and ``world.cases``.
        ``decisions``: the decision log from at least folds.DAY2_LOOKBACK_S back (read when not given)."""
        if decisions is None:
            decisions = records.decisions(self.ledger, since=now - folds.DAY2_LOOKBACK_S)
        window = folds.within(decisions, now, folds.DAY2_LOOKBACK_S)
        world.cases = fold_cases(window)
        rows = [(name, "+".join((node.state,) + tuple(node.flags)), node.reason, None)
                for name, node in sorted(self._slurm_nodes.items())]
        signals = tuple(self.redfish(world.nodes, now) if self.redfish else ()) + tuple(
            self.health(world.nodes, now) if self.health else ())
        if self._tracks is None:
            self._tracks = records.load_tracks(self.ledger)
        world.day2 = stage.decide(rows, world.nodes, world.raw, self.planning.pools(), self._tracks, world.cases,
                                  self.actuator.busy_nodes(), now, extra_signals=signals,
                                  fabric=inventory.fabric_places(self.hosts), also_out=also_out,
                                  replacements=bindings.fold(window), lent=self.actuator.lent_peers())
        if commit:
            if world.day2.tracks != self._tracks:
                records.save_tracks(self.ledger, world.day2.tracks)
            self._tracks = world.day2.tracks
        for note in world.day2.notes:
            self._say("day-2 %s" % note)
        return world.day2

    def gangs(self, now, decisions=None):
        """Gangs in progress: the planner's own bookkeeping rule over the recorded decisions
        (``decisions``: the log from at least folds.GANG_LOOKBACK_S back; read when not given).

        An admit ends its gang only once it succeeded: while it runs (or after it failed) the
        gang stays in progress, so its job is not given a second gang meanwhile."""
        if decisions is None:
            decisions = records.decisions(self.ledger, since=now - folds.GANG_LOOKBACK_S)
        acts = folds.gang_actions(d for d in folds.within(decisions, now, folds.GANG_LOOKBACK_S)
                                if d["action"] != "admit" or d["outcome"] == "ok")
        return self.planning.fold_gangs(acts)

    def converge(self):
        """After a restart: resume every decision a previous controller left without outcome."""
        pairs = [(d["id"], codec.decode(d)) for d in self.journal.unfinished()]
        if not pairs:
            return []
        try:
            views = {v.node: v for v in self.read_world().nodes}
        except ControllerError:
            views = {}   # no fabric peers offered; the runs still converge
        for decision_id, action in pairs:
            self._say("resume decision %s: %s %s (left in flight)" % (decision_id, action.kind, ",".join(action.nodes)),
                      **logs.action_fields(action, decision_id, event="resume"))
        machine = [(i, a) for i, a in pairs if not kinds.ledger_only(a)]
        for i, a in pairs:
            if kinds.ledger_only(a):
                self._ledger_step(i, a)
        self.launcher.launch(machine, views)
        return [i for i, _a in pairs]

    def once(self, dry_run=False):
        """One pass; with ``dry_run`` the plan is returned and nothing is recorded or run."""
        now = self.clock()
        finished = [] if dry_run else self._finish()
        try:
            plan, world = self.plan(now, commit=not dry_run)
        except ControllerError as exc:
            self._say("pass skipped: %s" % exc, "error", event="pass_skipped")
            return PassResult(finished=finished, error=str(exc))
        jobs, views = world.jobs, world.nodes
        if dry_run:
            return PassResult(plan=plan, jobs=jobs, nodes=views)
        self.journal.demand(jobs, sorted({v.pool for v in views}), now)
        self.samples.record(self.ledger, self._slurm_nodes, now)
        if self.image_features is not None:
            self.image_features(self._slurm_nodes, now)
        busy, lent = self.actuator.busy_nodes(), self.actuator.lent_peers()
        to_run, started = [], []
        # Slurm's own power-saving requests first: Slurm already waits on those nodes.
        asked = [(path, req, a) for path, req in self._spool_requests() for a in spool.actions_for(
            req, {v.node: v.state for v in views}, {v.node: v.pool for v in views}.get)]
        requests = [a for _path, _req, a in asked]
        # id(request action) -> (path, request): kept in the spool when not started now
        waiting = {id(a): (path, req) for path, req, a in asked}
        kept = {}      # path -> (request, nodes whose actions wait for a node free of other work)
        # the rollout's canaries and phase are written before its steps are recorded: a restarted
        # controller keeps the canaries it chose (docs/day2.md)
        mine = rollouts.apply_updates(self.ledger, world, self._say)
        planned = [self._with_record(a) for a in plan.actions]
        for action in list(world.day2.actions) + mine + requests + planned:
            machine = not kinds.ledger_only(action)
            if machine and (busy.intersection(action.nodes) or
                            (kinds.disturbs_peers(action) and lent.intersection(action.nodes))):
                # never two machine actions on one node at once, and a fabric peer of a run in
                # flight stays up until that run ends; Slurm's request waits in the spool
                if id(action) in waiting:
                    path, req = waiting[id(action)]
                    kept.setdefault(path, (req, []))[1].extend(action.nodes)
                continue
            decision_id = self.journal.intent(action, jobs, views, now)
            if action.blocked:
                self._say("not started %s %s %s: %s" % (decision_id, action.kind, ",".join(action.nodes),
                                                        action.blocked), "warning",
                          **logs.action_fields(action, decision_id, NOT_STARTED, event="not_started"))
                self.journal.outcome(decision_id, "%s %s" % (NOT_STARTED, action.blocked))
                continue
            started.append((decision_id, action))
            if machine:
                busy.update(action.nodes)
                lent.update(action.peers)
                to_run.append((decision_id, action))
            else:
                self._ledger_step(decision_id, action)
        self.launcher.launch(to_run, {v.node: v for v in world.supply})
        self._spool_done(kept)
        return PassResult(plan=plan, started=started, finished=finished, jobs=jobs, nodes=views)

    def _with_record(self, action):
        """The planner's break_fix (failed bring-ups in a row) gets a technician's record, its
        SEL read and its file like day-2's; the planner stays pure, the ledger is read here."""
        if action.kind != "break_fix" or action.record is not None or len(action.nodes) != 1:
            return action
        node = action.nodes[0]
        record = breakfix.for_failed_bringups(node, action.pool, self.ledger.history(node))
        return Action("break_fix", action.pool, action.nodes, action.reason, record=record, stage=REPAIR)

    def _spool_requests(self):
        """Power-saving requests waiting in the spool; removed after their decisions are recorded."""
        self._taken = []
        for path, request in spool.pending(self.spool_dir):
            self._taken.append(path)
            if request["kind"] == "invalid":
                self._say("spool: ignoring unreadable request %s (%s)" % (path, request.get("error")), "warning")
                continue
            yield path, request

    def _spool_done(self, kept=None):
        """Delete the requests whose decisions are recorded. A request with nodes not started
        this pass (busy) stays: whole when none started, else rewritten with just those nodes
        (written before the old one goes, so a crash between loses no node)."""
        kept = kept or {}
        for path in getattr(self, "_taken", ()):
            if path in kept:
                req, nodes = kept[path]
                if set(nodes) >= set(req["nodes"]):
                    continue
                try:
                    spool.submit(self.spool_dir, req["kind"], ",".join(sorted(set(nodes))), clock=self.clock)
                except ControllerError as exc:
                    self._say("spool: keeping %s whole: %s" % (path, exc), "warning")
                    continue
            spool.done(path)
        self._taken = []

    def _ledger_step(self, decision_id, action):
        outcome = "ok"
        try:
            if action.kind == "break_fix":
                for node in action.nodes:
                    records.transition(self.ledger, node, records.states.BREAK_FIX, action.reason,
                                       run_id="ctl-%s" % decision_id)
            if action.kind == "readmit":
                wrong = ["%s is %s" % (n, (self.ledger.get(n) or {}).get("state")) for n in action.nodes
                         if (self.ledger.get(n) or {}).get("state") != records.states.HOT]
                outcome = "failed: %s, not hot" % "; ".join(wrong) if wrong else outcome
        except records.LifecycleError as exc:   # refused by the state machine: recorded, loop goes on
            outcome = "failed: %s" % exc
        self._say("record %s %s %s: %s (%s)" % (decision_id, action.kind, ",".join(action.nodes), action.reason,
                                                 outcome), "info" if outcome == "ok" else "warning",
                  reason=action.reason, **logs.action_fields(action, decision_id, outcome, event="record"))
        self.journal.outcome(decision_id, outcome)

    def _finish(self, wait=False):
        finished = []
        for decision_id, action, outcome in self.actuator.collect(wait=wait):
            if action.kind == "break_fix":
                outcome = self._break_fix(action, outcome, "ctl-%s" % decision_id)
            else:
                outcome = self.launcher.settle(action, outcome, run_id="ctl-%s" % decision_id)
            if action.kind == "admit" and outcome == "ok":
                records.release_members(self.ledger, action.nodes)
            self.journal.outcome(decision_id, outcome)
            self._say("done %s %s on %s: %s" % (decision_id, action.kind, ",".join(action.nodes), outcome),
                      "info" if outcome == "ok" else "warning",
                      **logs.action_fields(action, decision_id, outcome, event="done"))
            finished.append((decision_id, action, outcome))
        return finished

    def _break_fix(self, action, run_outcome, run_id):
        """After the SEL read, whatever its outcome: the full record, its file, then the ledger
        transition (never lost to a BMC that could not be read, or a record that could not be written)."""
        why = action.reason
        if self.report_dir is None:
            why += " (record not written: no report directory; pass gpufleet_report_dir)"
        else:
            try:
                record = breakfix.complete(action.record, self.report_dir, run_outcome)
                why = "%s (record: %s)" % (record["summary"], breakfix.write(self.report_dir, record, self.clock()))
            except (OSError, KeyError, TypeError, ValueError) as exc:
                why += " (record not written: %s)" % exc
        try:
            for node in action.nodes:
                records.transition(self.ledger, node, records.states.BREAK_FIX, why, run_id=run_id)
        except records.LifecycleError as exc:
            return "failed: %s" % exc
        return "ok"

    def drain(self):
        """Wait for every running action and record its outcome (clean shutdown, `once`)."""
        return self._finish(wait=True)

    def run(self, interval, ttl_s, stop=lambda: False, wait_for_lease=True):
        """Reconcile every ``interval`` s while holding the lease; renew it each pass."""
        self.take_lease(ttl_s, wait_for_lease, stop)
        try:
            self.converge()
            self._hook("ready")
            while not stop():
                started = self.clock()
                renewed, holder, _exp = records.renew_lease(self.ledger, self.controller_id, ttl_s, started)
                if not renewed:
                    raise LeaseHeld("Lost the controller lease to %s; stopping without acting." % holder,
                                    holder=holder)
                result = self.once()
                self._hook("passed", result, started, self.clock())
                time.sleep(max(0.0, interval - (self.clock() - started)))
        finally:
            self._hook("stopping")
            try:
                self.drain()
                records.release_lease(self.ledger, self.controller_id)
            finally:
                self._hook("stopped")

    def _hook(self, name, *args):
        if self.hooks is not None:
            getattr(self.hooks, name)(*args)

    def take_lease(self, ttl_s, wait, stop=lambda: False, poll=2.0):
        while True:
            got, holder, expires = records.acquire_lease(self.ledger, self.controller_id, ttl_s, self.clock())
            if got:
                return
            if not wait or stop():
                raise LeaseHeld("Controller %s holds the lease until %s; only one controller acts at a time. "
                                "Stop it, or wait for the lease to expire (--wait)."
                                % (holder, records.iso(expires)), holder=holder)
            self._say("waiting: controller %s holds the lease" % holder, event="standby", holder=holder)
            self._hook("waiting", holder)
            time.sleep(poll)

