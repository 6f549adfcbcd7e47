"""The capacity planner's inputs and outputs: plain frozen data, no I/O.

``plan(demand, supply, policy, now, history)`` (gpufleet.capacity.planner) reads these and
returns actions with reasons. The controller fills them from Slurm and the ledger; the
simulator fills them from a demand trace and its simulated fleet. Times are epoch seconds.
"""
from dataclasses import dataclass, field
from typing import Optional, Tuple

__all__ = [
    "Job", "NodeView", "Demand", "Supply", "Action", "Plan",
    "TIERS", "BUSY", "IDLE", "HOT", "WARM", "COLD", "UNAVAILABLE", "PROVISIONING",
    "ACTION_KINDS",
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

# What the planner may ask for. Each kind maps to one playbook run in the controller
# and to one simulated latency in the simulator.
ACTION_KINDS = (
    "bringup",     # cold -> hot: the full bring-up (image, configure, gate), registered and held
    "wake",        # warm (parked) -> hot: power on, re-gate when the gate is stale, register held
    "resume",      # hot -> joined: make schedulable for non-gang demand
    "admit",       # hot x N -> joined together for one gang job (all or nothing)
    "substitute",  # a gang member failed: replace it with a spare of the same pool
    "rollback",    # a gang cannot meet its deadline: admit nothing, members back to a warm tier
    "hold",        # idle joined -> hot (drain, keep powered): scale-down into the hot tier
    "park",        # idle joined or hot -> warm: drain, power off through Redfish
    "break_fix",   # failed twice in a row: hand to a human
)


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
    gate_passed_at: Optional[float] = None
    image_version: Optional[str] = None
    consecutive_failures: int = 0
    gang_id: Optional[str] = None
    jobs: Tuple[str, ...] = ()      # jobs running on it


@dataclass(frozen=True)
class Demand:
    """Pending and running jobs; ``unservable`` lists jobs no pool can ever serve."""
    jobs: Tuple[Job, ...] = ()


@dataclass(frozen=True)
class Supply:
    nodes: Tuple[NodeView, ...] = ()
    in_flight: Tuple["Action", ...] = ()   # actions started and not finished (counted, not repeated)


@dataclass(frozen=True)
class Action:
    kind: str                       # one of ACTION_KINDS
    pool: str
    nodes: Tuple[str, ...]
    reason: str                     # why, in words a person reads in the decision log
    job_id: Optional[str] = None
    gang_id: Optional[str] = None
    replaces: Optional[str] = None  # substitute: the member it replaces
    target_tier: Optional[str] = None   # park/hold/rollback: the tier the nodes go to


@dataclass(frozen=True)
class Plan:
    actions: Tuple[Action, ...] = ()
    # Per pool: the floors in force (base, schedule, forecast) and why; unservable jobs;
    # demand and supply counts. The decision log stores this beside each action.
    notes: dict = field(default_factory=dict)
