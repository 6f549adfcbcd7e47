"""Every action kind in one table: how the controller runs it and what it leaves behind.

A row says which playbook runs a kind (or a tuple run in order; ``LEDGER``: a record step done
inside the pass; None: none, recorded as failed), its extra variables, the ledger state its
nodes end in when it worked, whether it may power off or reimage a node lent as a fabric peer,
whether it is bounded by the concurrency limits, and which stages ask for it. The loop, the
launcher and the planner's budget read this table, nothing else.
"""
from dataclasses import dataclass, field
from typing import Callable, Optional, Tuple

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from gpufleet.work.action import CAPACITY, REPAIR, ROLLOUT

__all__ = ["Kind", "KINDS", "LEDGER", "SLURM_SUSPENDED", "kinds_of", "playbook_of", "playbook_for",
           "ledger_only", "expected_state", "disturbs_peers", "ACTION_KINDS", "BRINGUP_KINDS",
           "BOUNDED_KINDS", "DAY2_KINDS"]

LEDGER = "ledger"   # a record, not machine work: done inline, inside the pass
# The target tier that says Slurm's SuspendProgram asked: Slurm already took the node out of
# scheduling and resumes it itself, so its park must not drain it (gpufleet.controller.spool).
SLURM_SUSPENDED = "suspended"
# bounded: "" never held back (they release or record; blocking them would strand nodes);
# "fleet": by the fleet's concurrency_limit; "pool": also by the pool's max_concurrent_bringups.
FLEET, POOL = "fleet", "pool"


def _none(_action):
    return {}


def _admit(action):
    return {"gpufleet_admit_nodes": list(action.nodes), "gpufleet_admit_job": action.job_id or "",
            "gpufleet_gang_id": action.gang_id or ""}


def _resume(action):
    extra = _admit(action)
    if action.reservation:
        extra.update(gpufleet_replace_reservation=action.reservation,
                     gpufleet_replace_nodes=list(action.reserve_nodes),
                     gpufleet_replace_failed=list(action.release_nodes))
    return extra


def _power_off(_action):
    return {"gpufleet_park_power_off": True}


def _park(action):
    if action.target_tier == SLURM_SUSPENDED:
        return {"gpufleet_park_power_off": True, "gpufleet_park_drain": False}
    return _power_off(action)


def _recycle(action):
    # a rollout or renewal installs its version (the catalogue's variables) and gate profile
    extra = {"gpufleet_recycle_hold": True, "gpufleet_recycle_drained": True,
             "gpufleet_fabric_peers": list(action.peers)}
    extra.update(action.image or {})
    if (action.rollout or {}).get("gate_profile"):
        extra.update(gpufleet_gate_profile=action.rollout["gate_profile"])
    return extra


def _readmit(action):
    return {"joined": _admit, "warm": _power_off}.get(action.target_tier, _none)(action)


@dataclass(frozen=True)
class Kind:
    playbook: object = None         # a playbook name, a tuple run in order, LEDGER or None
    by_tier: dict = field(default_factory=dict)     # target tier -> playbook, where it differs
    extra: Callable = _none         # action -> its own extra variables (targets and reason: every run's)
    expected: Optional[str] = None  # the ledger state its nodes end in when it worked (None: no single one)
    expected_by_tier: dict = field(default_factory=dict)   # target tier -> that state, where it differs
    disturbs_peers: bool = False    # powers a node off or reimages it
    bounded: str = ""               # "", FLEET or POOL
    stages: Tuple[str, ...] = (CAPACITY,)
    needs_record: bool = False      # without a technician's record: a ledger step


KINDS = {
    # cold -> hot: the full bring-up (image, configure, gate), registered and held (the planner
    # resumes or admits in a separate, fast step, so a gang never starts on a half-ready set);
    # target_tier warm: then parked
    "bringup": Kind("bringup", {"warm": ("bringup", "park")}, lambda _a: {"gpufleet_bringup_hold": True},
                    states.HOT, {"joined": states.JOINED, "warm": states.PARKED}, disturbs_peers=True,
                    bounded=POOL),
    # warm (parked) -> hot: power on, re-gate when the gate is stale, register held
    "wake": Kind("wake", expected=states.HOT, expected_by_tier={"joined": states.JOINED, "warm": states.PARKED},
                 bounded=POOL),
    # hot -> joined: make schedulable for non-gang demand; day-2: a hot node replacing a failed
    # member of a running multi-node job (job_id: the job, replaces: the failed node)
    "resume": Kind("admit", extra=_resume, expected=states.JOINED, stages=(CAPACITY, REPAIR)),
    # hot x N -> joined together for one gang job (all or nothing)
    "admit": Kind("admit", extra=_admit, expected=states.JOINED),
    # a gang member failed or missed its own deadline: nodes = the spare of the same pool,
    # replaces = the member
    "substitute": Kind(LEDGER),
    # a gang cannot meet its deadline: admit nothing; nodes (members hot or on their way) back
    # to warm, members never started released as they are
    "rollback": Kind("park", extra=_power_off, expected=states.PARKED, disturbs_peers=True),
    # idle joined -> hot (drain, keep powered): scale-down into the hot tier
    "hold": Kind("hold", extra=lambda _a: {"gpufleet_park_power_off": False}, expected=states.HOT),
    # idle joined or hot -> warm: drain, power off through Redfish
    "park": Kind("park", extra=_park, expected=states.PARKED, disturbs_peers=True, bounded=FLEET),
    # to a human: the planner's after failures_before_break_fix failed bring-ups in a row, or
    # day-2's; with a record (the loop adds one) the BMC's log is read for the technician first
    "break_fix": Kind("break_fix", needs_record=True, stages=(CAPACITY, REPAIR)),
    # a gang is formed: these nodes are set aside for one job until admit/rollback
    "reserve": Kind(LEDGER),
    # day-2: the controller drains from the Slurm side (a powered-off node cannot drain itself)
    "drain": Kind("drain", expected=states.DRAINING, stages=(REPAIR, ROLLOUT)),
    "requeue": Kind("requeue", extra=lambda a: {"gpufleet_requeue_jobs": list(a.jobs)}, stages=(REPAIR,)),
    # a replaced member's job pending again: bound to its replacement's reservation
    "bind": Kind("bind_replacement", extra=lambda a: {"gpufleet_bind_job": a.job_id,
                                                      "gpufleet_bind_reservation": a.reservation,
                                                      "gpufleet_bind_nodes": ",".join(a.reserve_nodes)},
                 stages=(REPAIR,)),
    # reimage and gate; skips its own drain (done before) and ends hot (held): readmit places it
    "recycle": Kind("recycle", extra=_recycle, expected=states.HOT, disturbs_peers=True, stages=(REPAIR, ROLLOUT)),
    # renewal without a reimage: the gate again on the drained node, which ends hot (held)
    "revalidate": Kind("revalidate", expected=states.HOT, stages=(ROLLOUT,)),
    # back to the tier the floors need (to hot: a ledger step, the recycle left it hot)
    "readmit": Kind(None, {"joined": "admit", "warm": "park", "hot": LEDGER}, _readmit, None,
                    {"joined": states.JOINED, "warm": states.PARKED, "hot": states.HOT}, stages=(REPAIR, ROLLOUT)),
}


def kinds_of(stage):
    """The kinds ``stage`` asks for, in the table's order."""
    return tuple(name for name, kind in KINDS.items() if stage in kind.stages)


ACTION_KINDS = kinds_of(CAPACITY)     # what the planner may ask for (the simulator refuses others)
DAY2_KINDS = kinds_of(REPAIR)
BRINGUP_KINDS = tuple(name for name, kind in KINDS.items() if kind.bounded == POOL)
BOUNDED_KINDS = tuple(name for name, kind in KINDS.items() if kind.bounded)


def playbook_of(action):
    """The playbook (or tuple run in order) for ``action``, LEDGER for a record step, None: none."""
    kind = KINDS.get(action.kind)
    if kind is None:
        return None
    if kind.needs_record and action.record is None:
        return LEDGER
    return kind.by_tier.get(action.target_tier, kind.playbook)


def ledger_only(action):
    """Record-only kinds, a readmit to hot (the recycle already left the node hot) and a
    break_fix without a record: done inside the pass, no playbook."""
    return playbook_of(action) == LEDGER


def disturbs_peers(action):
    """Never started on a node lent as a fabric peer to a run in flight (its gate's iperf3
    server runs there; a parked peer fails that gate)."""
    kind = KINDS.get(action.kind)
    return kind is not None and kind.disturbs_peers


def playbook_for(action):
    """(playbook or a tuple run in order, extravars) for ``action``; (None, {}) for record-only kinds."""
    playbook = playbook_of(action)
    if playbook is None or playbook == LEDGER:
        return None, {}
    extra = dict(KINDS[action.kind].extra(action), gpufleet_targets=",".join(action.nodes),
                 gpufleet_reason=action.reason)
    if action.target_tier == "joined":
        # Slurm's power saving already placed a job on the node: it must come up schedulable
        extra.update(gpufleet_bringup_hold=False, gpufleet_wake_resume=True)
    return playbook, extra


def expected_state(action):
    """The ledger state the action's nodes end in when it worked (None: no single one)."""
    kind = KINDS.get(action.kind)
    if kind is None:
        return None
    return kind.expected_by_tier.get(action.target_tier, kind.expected)
