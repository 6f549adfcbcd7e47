"""What the fleet view reads, as plain frozen data: pools, ledger transitions, Slurm samples.

``sources.load`` fills these from the ledger, the policy and Slurm; tests build them by hand.
Times are epoch seconds. Jobs are ``gpufleet.capacity.model.Job`` (the planner's contract).
"""
from dataclasses import dataclass, field
from typing import Optional, Tuple

__all__ = ["PoolSpec", "Transition", "Sample", "SlurmNode", "FleetInputs"]


@dataclass(frozen=True)
class PoolSpec:
    """One pool: the nodes it owns (paid for), their SKU and GPUs per node."""
    name: str
    sku: str
    gpus_per_node: int
    members: Tuple[str, ...]
    partition: str = ""
    max_concurrent_bringups: int = 0     # 0: no per-pool limit
    gate_validity: float = 7 * 86400.0   # seconds a passed gate stays valid (the policy's)


@dataclass(frozen=True)
class Transition:
    """One ledger transition (``Ledger.history()`` row with ``at`` in epoch seconds)."""
    node: str
    at: float
    to_state: str
    from_state: Optional[str] = None
    why: str = ""
    gate_report_id: Optional[str] = None
    gang_id: Optional[str] = None


@dataclass(frozen=True)
class Sample:
    """Slurm's state of a node at a time, as the controller sampled it (``node_samples``)."""
    node: str
    at: float
    slurm_state: str
    reason: str = ""


@dataclass(frozen=True)
class SlurmNode:
    """A node as ``sinfo --json`` shows it now; ``states`` are upper-case words
    (base state and flags: ``{"IDLE"}``, ``{"IDLE", "DRAIN"}``, ``{"ALLOCATED"}``)."""
    name: str
    states: frozenset
    reason: str = ""
    partitions: Tuple[str, ...] = ()


@dataclass(frozen=True)
class FleetInputs:
    now: float
    pools: Tuple[PoolSpec, ...] = ()
    transitions: Tuple[Transition, ...] = ()      # oldest first
    samples: Tuple[Sample, ...] = ()              # oldest first
    jobs: tuple = ()                              # capacity.model.Job, pending and running
    # What Slurm says beyond the planner's Job: job_id -> {start_time, dependency, qos,
    # reservation} (``slurm_json.job_extras``).
    job_extra: dict = field(default_factory=dict)
    slurm_nodes: dict = field(default_factory=dict)   # name -> SlurmNode
    gate_reports: dict = field(default_factory=dict)  # node -> gate report dict
    gangs: tuple = ()        # dicts: gang_id, job, size, status, members [{node, status}]
    decisions: tuple = ()    # ledger decision rows (newest last)
    fleet_concurrency: int = 0   # fleet-wide bring-up limit (0: none)

    def pool(self, name):
        return next((pool for pool in self.pools if pool.name == name), None)

    def pool_of(self, node):
        return next((pool for pool in self.pools if node in pool.members), None)
