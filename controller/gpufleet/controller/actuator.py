"""Run the planner's actions through the collection's playbooks, a bounded number at once.

Each action kind is one playbook run (or one ledger step for the bookkeeping kinds), with
the action's nodes as ``gpufleet_targets``. Runs happen in a thread pool (the fleet-wide
concurrency limit); ``submit`` returns at once and ``collect`` hands back finished ones, so
the loop keeps reconciling (a job served from hot nodes is not stuck behind a bring-up).
"""
import concurrent.futures
import threading

from gpufleet import playbook_runner, state_dir
from gpufleet.controller import spool

__all__ = ["PLAYBOOK_OF", "DISTURBS_PEERS", "playbook_for", "Actuator"]

# kind -> (playbook, extra variables). bringup stops at hot (registered, held): the planner
# resumes or admits in a separate, fast step, so a gang never starts on a half-ready set.
PLAYBOOK_OF = {
    "bringup": ("bringup", {"gpufleet_bringup_hold": True}),
    "wake": ("wake", {}),
    "resume": ("admit", {}),
    "admit": ("admit", {}),
    "hold": ("hold", {}),
    "park": ("park", {}),
    "rollback": ("park", {}),
    # day-2 (gpufleet.day2.stage): the controller drains from the Slurm side (a powered-off
    # node cannot drain itself), so recycle skips its own drain and ends hot (held), and
    # readmit puts it where the floors need it
    "drain": ("drain", {}),
    "requeue": ("requeue", {}),
    # a replaced member's job pending again: bound to its replacement's reservation
    "bind": ("bind_replacement", {}),
    "recycle": ("recycle", {"gpufleet_recycle_hold": True, "gpufleet_recycle_drained": True}),
    # renewal without a reimage: the gate again on the drained node, which ends hot (held)
    "revalidate": ("revalidate", {}),
    "readmit": (None, {}),
}
# readmit's playbook by target tier (to hot is a ledger step: the recycle left it hot)
_READMIT = {"joined": "admit", "warm": "park"}
# Kinds that power a node off or reimage it: never started on a node lent as a fabric peer to a
# run in flight (its gate's iperf3 server runs there; a parked peer fails that gate).
DISTURBS_PEERS = frozenset(("bringup", "recycle", "park", "rollback"))


def playbook_for(action):
    """(playbook or a tuple run in order, extravars) for ``action``; (None, {}) for record-only kinds."""
    if action.kind == "break_fix" and getattr(action, "record", None) is not None:
        # day-2's break_fix reads the BMC's log for the technician first (controller/breakfix.py)
        return "break_fix", {"gpufleet_targets": ",".join(action.nodes), "gpufleet_reason": action.reason}
    if action.kind not in PLAYBOOK_OF:
        return None, {}
    playbook, extra = PLAYBOOK_OF[action.kind]
    if action.kind == "readmit":
        playbook = _READMIT.get(action.target_tier)
        if playbook is None:
            return None, {}
    if action.kind == "bringup" and action.target_tier == "warm":
        playbook = ("bringup", "park")     # bring up, then park: warm supply
    extra = dict(extra, gpufleet_targets=",".join(action.nodes), gpufleet_reason=action.reason)
    if action.kind in ("admit", "resume") or (action.kind == "readmit" and playbook == "admit"):
        extra.update(gpufleet_admit_nodes=list(action.nodes), gpufleet_admit_job=action.job_id or "",
                     gpufleet_gang_id=action.gang_id or "")
    if action.kind in ("park", "rollback", "hold") or playbook == "park":
        extra.update(gpufleet_park_power_off=(action.kind != "hold"))
    if action.kind == "park" and action.target_tier == spool.SLURM_SUSPENDED:
        # Slurm's SuspendProgram: Slurm already took the node out and resumes it itself
        extra.update(gpufleet_park_drain=False)
    if action.kind == "recycle":
        extra.update(gpufleet_fabric_peers=list(action.peers))
        # a rollout or renewal installs its version (the catalogue's variables) and gate profile
        extra.update(getattr(action, "image", None) or {})
        profile = (getattr(action, "rollout", None) or {}).get("gate_profile")
        if profile:
            extra.update(gpufleet_gate_profile=profile)
    if action.kind == "requeue":
        extra.update(gpufleet_requeue_jobs=list(action.jobs))
    if action.kind == "resume" and getattr(action, "reservation", ""):
        extra.update(gpufleet_replace_reservation=action.reservation,
                     gpufleet_replace_nodes=list(action.reserve_nodes),
                     gpufleet_replace_failed=list(action.release_nodes))
    if action.kind == "bind":
        extra.update(gpufleet_bind_job=action.job_id, gpufleet_bind_reservation=action.reservation,
                     gpufleet_bind_nodes=",".join(action.reserve_nodes))
    if action.target_tier == "joined":
        # Slurm's power saving already placed a job on the node: it must come up schedulable
        extra.update(gpufleet_bringup_hold=False, gpufleet_wake_resume=True)
    return playbook, extra


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

    def submit(self, decision_id, action, playbook, extravars):
        """Start one playbook run for a recorded decision (never twice for the same id)."""
        return self.submit_many([(decision_id, action)], playbook, extravars)

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
