"""Day-2 data: health signals and the severities that order the work (plain frozen data)."""
from dataclasses import dataclass
from typing import Tuple

__all__ = ["Signal", "OperatorDrain", "Detection", "SEVERITY", "severity_of"]

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
