"""Run the planner's actions through the collection's playbooks, a bounded number at once.

Each action kind is one playbook run (gpufleet.work.kinds says which, with what variables; the
bookkeeping kinds are ledger steps), with the action's nodes as ``gpufleet_targets``. Runs
happen in a thread pool (the fleet-wide concurrency limit); ``submit_many`` returns at once and
``collect`` hands back finished ones, so the loop keeps reconciling (a job served from hot
nodes is not stuck behind a bring-up).
"""
import concurrent.futures
import threading

from gpufleet import playbook_runner, state_dir

__all__ = ["Actuator"]


class Actuator:
    """Runs playbooks for decisions; ``run(playbook, extravars, run_id) -> (status, rc)`` is injectable."""

    def __init__(self, inventory, var_files=(), concurrency=4, run=None, timeout=3600):
        self.inventory = inventory
        self.var_files = tuple(var_files)
        self.timeout = timeout
        self._run = run or self._run_playbook
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, concurrency),
                                                           thread_name_prefix="gpufleet-action")
        self._lock = threading.Lock()
        self._running = {}   # decision id -> (action, future, run id); a batch shares one future
        self._peers = {}     # decision id -> the fabric peers its run was offered

    def _run_playbook(self, playbook, extravars, run_id):
        """One playbook, or several in order (stopping at the first that fails)."""
        status, rc = "successful", 0
        for index, name in enumerate((playbook,) if isinstance(playbook, str) else playbook):
            status, rc, _artifacts = playbook_runner.run_playbook(
                name, self.inventory, "%s-%d" % (run_id, index) if index else run_id, extravars=extravars,
                var_files=self.var_files, timeout=self.timeout)
            if rc != 0:
                break
        return status, rc

    def run_ids(self):
        """The run ids of the runs in flight (retention never prunes their folders)."""
        with self._lock:
            return {entry[2] for entry in self._running.values()}

    def in_flight(self):
        with self._lock:
            return tuple(entry[0] for entry in self._running.values())

    def busy_nodes(self):
        return {n for action in self.in_flight() for n in action.nodes}

    def lent_peers(self):
        """Nodes offered as fabric peers to runs in flight (none of them is busy itself)."""
        with self._lock:
            return set().union(*self._peers.values()) - {n for entry in self._running.values() for n in entry[0].nodes}

    def submit_many(self, pairs, playbook, extravars):
        """One playbook run for several recorded decisions (a batch: bring-ups validated together
        share a fabric test set); decisions already running are never started again."""
        with self._lock:
            pairs = [(i, a) for i, a in pairs if i not in self._running]
            if not pairs:
                return False
            run_id = "ctl-%s-%s" % (pairs[0][0], pairs[0][1].kind)
            future = self._pool.submit(self._run, playbook, extravars, run_id)
            for decision_id, action in pairs:
                self._running[decision_id] = (action, future, run_id)
                self._peers[decision_id] = frozenset(extravars.get("gpufleet_fabric_peers") or ())
            return True

    def collect(self, wait=False):
        """Finished runs as (decision id, action, outcome text); ``wait`` blocks for all."""
        with self._lock:
            items = list(self._running.items())
        if wait:
            concurrent.futures.wait([entry[1] for _k, entry in items])
        done = []
        for decision_id, (action, future, run_id) in items:
            if not future.done():
                continue
            try:
                status, rc = future.result()
                outcome = "ok" if rc == 0 else "failed: playbook %s (rc=%s), see %s" % (
                    status, rc, state_dir.runs_dir(run_id))
            except Exception as exc:  # the run itself broke: record why, keep the loop alive
                outcome = "failed: %s" % str(exc).splitlines()[0][:300]
            with self._lock:
                self._running.pop(decision_id, None)
                self._peers.pop(decision_id, None)
            done.append((decision_id, action, outcome))
        return done

    def shutdown(self):
        self._pool.shutdown(wait=True)
