"""The capacity planner's inputs and outputs: plain frozen data, no I/O.

``plan(demand, supply, policy, now, history)`` (gpufleet.capacity.planner) reads these and
returns actions with reasons. The controller fills them from Slurm and the ledger; the
simulator fills them from a demand trace and its simulated fleet. Times are epoch seconds.
"""
from dataclasses import dataclass, field
from typing import Optional, Tuple

# the one action model (gpufleet.work): what the planner asks for and how each kind is bounded
from gpufleet.work.action import Action
from gpufleet.work.kinds import ACTION_KINDS, BOUNDED_KINDS, BRINGUP_KINDS

__all__ = [
    "Job", "NodeView", "Demand", "Supply", "Action", "Plan", "Gang", "GangMember",
    "DemandSample",
    "TIERS", "BUSY", "IDLE", "HOT", "WARM", "COLD", "UNAVAILABLE", "PROVISIONING",
    "ACTION_KINDS", "BRINGUP_KINDS", "BOUNDED_KINDS", "PlanInputError",
]

# Warmth tiers, fastest first (docs/capacity.md). PROVISIONING: on its way (imaging,
# configuring, validating, waking); counted toward what a pool will have, never admitted.
BUSY = "busy"
IDLE = "idle"
HOT = "hot"
WARM = "warm"
COLD = "cold"
PROVISIONING = "provisioning"
UNAVAILABLE = "unavailable"
TIERS = (BUSY, IDLE, HOT, WARM, COLD, PROVISIONING, UNAVAILABLE)


class PlanInputError(ValueError):
    """The planner's inputs contradict themselves (a node listed twice, an unknown tier): the
    caller built them wrong, so nothing is planned rather than planning on a guess."""


@dataclass(frozen=True)
class Job:
    """One pending (or running) job as the scheduler reports it."""
    job_id: str
    nodes: int                      # nodes the job needs (1 for a single-node job)
    gpus_per_node: int = 0
    partition: str = ""
    features: Tuple[str, ...] = ()  # constraint features and GRES names
    submit_time: float = 0.0
    state: str = "PENDING"          # PENDING | RUNNING
    reason: str = ""                # the scheduler's pending reason (Resources, Priority, ...)
    pool: Optional[str] = None      # filled by demand mapping; None: no pool can serve it
    nodes_assigned: Tuple[str, ...] = ()
    reservation: str = ""           # the reservation the job is bound to ("" = none)

    @property
    def gang(self):
        """Multi-node jobs start all at once or not at all."""
        return self.nodes > 1


@dataclass(frozen=True)
class NodeView:
    """One node as the planner sees it: its pool, tier and what the tier rests on."""
    node: str
    pool: str
    tier: str                       # one of TIERS
    state: str                      # ledger lifecycle state
    since: float = 0.0              # when it entered the current tier/state
    idle_since: Optional[float] = None   # joined and running nothing since then
    gate_passed_at: Optional[float] = None   # last passed acceptance gate (tiers.gate_valid)
    image_version: Optional[str] = None
    consecutive_failures: int = 0   # failed bring-ups in a row; break_fix at the policy's limit
    gang_id: Optional[str] = None   # the gang it is reserved for, as the ledger records it
    jobs: Tuple[str, ...] = ()      # jobs running on it (never parked or held while non-empty)


@dataclass(frozen=True)
class Demand:
    """Pending and running jobs as the scheduler reports them (``Job.pool`` may be unset:
    gpufleet.capacity.demand.map_jobs fills it and sets aside the jobs no pool can serve)."""
    jobs: Tuple[Job, ...] = ()


@dataclass(frozen=True)
class GangMember:
    """One node reserved for a gang and the time by which it must be hot (its own deadline)."""
    node: str
    deadline_at: float


@dataclass(frozen=True)
class Gang:
    """A gang in progress: formed by a ``reserve`` action, ended by ``admit`` or ``rollback``.

    The controller stores it (ledger) and the simulator keeps it in memory; both hand it back
    in ``Supply.gangs`` on the next pass. ``gang.fold`` applies a plan's actions to it.
    """
    gang_id: str
    job_id: str
    pool: str
    size: int                               # nodes the job needs
    deadline_at: float                      # reserve time + the pool's gang_deadline
    members: Tuple[GangMember, ...] = ()    # current members (substitutes replace entries)
    replaced: Tuple[str, ...] = ()          # members swapped out so far, never taken back


@dataclass(frozen=True)
class Supply:
    """Every node of every pool, the work under way and the gangs in progress."""
    nodes: Tuple[NodeView, ...] = ()
    in_flight: Tuple["Action", ...] = ()   # actions started, not finished (counted, not repeated)
    gangs: Tuple[Gang, ...] = ()           # gangs reserved and neither admitted nor rolled back


@dataclass(frozen=True, slots=True)
class DemandSample:
    """One minute of recorded demand for one pool (the ledger's demand history).

    slots: a month of history is tens of thousands of these per pool."""
    pool: str
    minute: float                   # epoch seconds at the start of the minute
    gpus_running: int = 0
    gpus_pending: int = 0
    gpus_pending_capacity: int = 0  # pending for lack of capacity (Resources), not Priority etc.

    @property
    def gpus(self):
        """The demand the forecast reads: what ran plus what waited."""
        return self.gpus_running + self.gpus_pending


@dataclass(frozen=True)
class Plan:
    """The planner's answer: actions in the order to start them, and notes per pool."""
    actions: Tuple[Action, ...] = ()
    # Per pool: the floors in force (base, schedule, forecast) and why; unservable jobs;
    # demand and supply counts. The plan carries them (`controller once` prints them); a
    # decision row holds its demand, supply, action and reason, not these notes.
    notes: dict = field(default_factory=dict)
