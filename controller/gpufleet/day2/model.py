"""Day-2 data: health signals and the severities that order the work (plain frozen data)."""
from dataclasses import dataclass
from typing import Optional, Tuple

__all__ = ["Signal", "OperatorDrain", "Detection", "SEVERITY", "severity_of", "DAY2_KINDS",
           "Day2Action"]

# Lower is more severe: the budget starts the worst first. A node that is gone (down, failed,
# powered off) outranks one that still answers but reports a fault.
SEVERITY = {
    "slurm_fail": 0,
    "power_off": 0,
    "slurm_down": 1,
    "bmc_health": 2,
    "health_check": 2,
    "slurm_drain": 3,
    "renewal": 10,     # routine re-validation: after every fault
}
_UNKNOWN = 4           # after every known fault, still ahead of routine renewal


def severity_of(kind):
    """Unknown kinds sort after every known fault and before renewal."""
    return SEVERITY.get(kind, _UNKNOWN)


@dataclass(frozen=True)
class Signal:
    """One health observation: which node, where it came from, what it says and since when."""
    node: str
    source: str        # slurm | health_check | redfish
    kind: str          # a key of SEVERITY
    reason: str        # in words a person reads in the decision log
    first_seen: float  # epoch seconds


@dataclass(frozen=True)
class OperatorDrain:
    """A drain or down set by a person: never acted on, shown in ``status``."""
    node: str
    state: str
    reason: str


@dataclass(frozen=True)
class Detection:
    """What one look at Slurm found: signals to act on, operator drains left alone, and
    nodes carrying our own ``gpufleet:`` reason (already in the controller's hands)."""
    signals: Tuple[Signal, ...] = ()
    operator: Tuple[OperatorDrain, ...] = ()
    ours: Tuple[str, ...] = ()


# What the day-2 stage asks the controller to do; each is one recorded decision. resume: a hot
# node replacing a failed member of a running multi-node job (job_id: the job, replaces: the
# failed node), run as the capacity planner's resume is.
DAY2_KINDS = ("drain", "requeue", "recycle", "readmit", "break_fix", "resume", "bind")


@dataclass(frozen=True)
class Day2Action:
    """A day-2 step as the controller records and runs it. The first nine fields are the
    capacity planner's ``Action`` fields (the journal and the actuator read those); ``jobs``
    (requeue), ``peers`` (recycle's fabric peers), ``record`` (break_fix's record, a dict) and
    ``blocked`` (why it must not start: recorded, not run) are day-2's own."""
    kind: str
    pool: str
    nodes: Tuple[str, ...]
    reason: str
    job_id: Optional[str] = None
    gang_id: Optional[str] = None
    replaces: Optional[str] = None
    target_tier: Optional[str] = None
    deadline_at: Optional[float] = None
    jobs: Tuple[str, ...] = ()
    peers: Tuple[str, ...] = ()
    record: Optional[dict] = None
    blocked: str = ""
    # "replace, then repair": the reservation (JOB@EPOCH) a replacement is resumed in and bound
    # to once its job is pending again, its nodes (the job's survivors and the spare) and the
    # job's failed members the spares replace (taken out of the job's own gang reservation)
    reservation: str = ""
    reserve_nodes: Tuple[str, ...] = ()
    release_nodes: Tuple[str, ...] = ()
