"""The reconcile loop: read demand and supply, ask the planner, record, act, repeat.

One pass (``Reconciler.once``) never blocks on a playbook: actions start in the actuator's
pool and finish in a later pass, which records their outcome. ``run`` repeats passes every
``interval`` seconds while this controller holds the ledger lease.
"""
import time

from dataclasses import replace

from gpufleet.capacity.forecast import history_from_rows
from gpufleet.controller import breakfix, images, inventory, learning, logs, records, spool, stages, supply
from gpufleet.controller.errors import ControllerError, LeaseHeld
from gpufleet.controller.journal import Journal
from gpufleet.controller.launch import Launcher
from gpufleet.controller.sampling import SampleRecorder
from gpufleet.day2 import bindings, rollout_book
from gpufleet.day2.cases import NOT_STARTED, fold_cases
from gpufleet.work import codec, folds, kinds
from gpufleet.work.action import REPAIR, Action

__all__ = ["Reconciler", "PassResult"]

DEMAND_HISTORY_S = 28 * 86400.0     # the demand history the forecasts read and the learned model is fitted on


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
        return stages.World(raw, mapped, unservable, views, rollout_rows)

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

    def observe(self, world, now):
        """``world`` (read_world) with what the stages read beyond it. One read of the decision log
        gives the cases, replacements, rollout book (from the oldest unfinished rollout) and gangs."""
        recent = records.decisions(self.ledger, since=now - folds.LOOKBACK_S)
        window = folds.within(recent, now, folds.DAY2_LOOKBACK_S)
        active = tuple(r for r in world.rollout_rows if r["phase"] in records.ROLLOUT_ACTIVE)
        oldest = min([r["created_at"] for r in active], default=now)
        book_from = (records.decisions(self.ledger, since=min(oldest, now - folds.LOOKBACK_S))
                     if recent and oldest < recent[0]["at"] else recent)
        rows = tuple((name, "+".join((node.state,) + tuple(node.flags)), node.reason, None)
                     for name, node in sorted(self._slurm_nodes.items()))
        signals = tuple(self.redfish(world.nodes, now) if self.redfish else ()) + tuple(
            self.health(world.nodes, now) if self.health else ())
        if self._tracks is None:
            self._tracks = records.load_tracks(self.ledger)
        history = history_from_rows(records.demand_history(self.ledger, since=now - DEMAND_HISTORY_S))
        gang_acts = folds.gang_actions(folds.within(recent, now, folds.GANG_LOOKBACK_S))
        return replace(world, now=now, rows=rows, signals=signals, tracks=self._tracks, cases=fold_cases(window),
                       replacements=bindings.fold(window), rollouts=active, rollout_book=rollout_book.fold(book_from),
                       pools=self.planning.pools(), catalogue=self.catalogue,
                       busy=frozenset(self.actuator.busy_nodes()), lent=frozenset(self.actuator.lent_peers()),
                       fabric=inventory.fabric_places(self.hosts), history=history,
                       forecasters=self.learning.forecasters(self.planning.policy, history, now),
                       in_flight=self.actuator.in_flight(), gangs=self.planning.fold_gangs(gang_acts))

    def plan(self, now=None):
        """(stages.Pass, World); the stages' notes are said here (a dry run too), writes wait for apply."""
        now = self.clock() if now is None else now
        world = self.observe(self.read_world(now), now)
        passed = stages.decide(world, (stages.Repair(), stages.Rollout(), stages.Capacity(self.planning)))
        self.say_notes(passed)
        return passed, world

    def say_notes(self, passed):
        for note in passed.day2.notes:
            self._say("day-2 %s" % note)
        for note in passed.rollout.notes:
            self._say("rollout %s" % note)

    def apply(self, passed):
        """The stages' ledger writes before their actions are recorded (a restarted controller counts
        on from the day-2 tracks, keeps the canaries it chose) -> the rollout actions to record: a
        phase change that lost a race (an operator halted or rolled back) drops that rollout's steps."""
        if passed.day2.tracks != self._tracks:
            records.save_tracks(self.ledger, passed.day2.tracks)
        self._tracks = passed.day2.tracks
        lost = set()
        for update in passed.rollout.updates:
            if update.canaries is not None:
                records.set_rollout_canaries(self.ledger, update.rollout_id, update.canaries)
                self._say("rollout %s: canaries %s" % (update.rollout_id, ", ".join(update.canaries)))
            if update.phase is not None:
                if records.set_rollout_phase(self.ledger, update.rollout_id, update.phase, update.reason,
                                             expect=update.expect or None):
                    self._say("rollout %s: %s (%s)" % (update.rollout_id, update.phase, update.reason))
                else:
                    lost.add(update.rollout_id)
        return [a for a in passed.rollout.actions
                if a.rollout.get("rollout_id") is None or a.rollout["rollout_id"] not in lost or a.kind == "readmit"]

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
            passed, world = self.plan(now)
        except ControllerError as exc:
            self._say("pass skipped: %s" % exc, "error", event="pass_skipped")
            return PassResult(finished=finished, error=str(exc))
        plan, jobs, views = passed.capacity, world.jobs, world.nodes
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
        mine = self.apply(passed)
        planned = [self._with_record(a) for a in plan.actions]
        for action in list(passed.day2.actions) + mine + requests + planned:
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
        # fabric peers are offered from the planner's supply, never a node a stage holds
        self.launcher.launch(to_run, {v.node: v for v in stages.supply(world, passed.claimed)})
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

    def _spool_done(self, kept):
        """Delete the requests whose decisions are recorded. A request with nodes not started
        this pass (busy) stays: whole when none started, else rewritten with just those nodes
        (written before the old one goes, so a crash between loses no node)."""
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

