"""The one thing-to-do the stages hand the loop: plain frozen data, no I/O."""
from dataclasses import dataclass, field
from typing import Optional, Tuple

__all__ = ["Action", "CAPACITY", "REPAIR", "ROLLOUT", "STAGES"]

# The stage an action comes from: its journal line carries that stage's payload, and only that
# stage's book folds it back (a rollout step is never taken for a repair case).
CAPACITY = "capacity"
REPAIR = "repair"
ROLLOUT = "rollout"
STAGES = (CAPACITY, REPAIR, ROLLOUT)


@dataclass(frozen=True)
class Action:
    """One thing to do, with the reason a person reads in the decision log (hashable: the dict
    fields stay out of the hash).

    The first nine fields are every stage's; the gang fields are the planner's (gpufleet.capacity),
    ``jobs`` to ``release_nodes`` the repair stage's (gpufleet.day2.stage), ``rollout`` and
    ``image`` the rollout stage's (gpufleet.day2.rollout_stage); ``peers`` and ``blocked`` both."""
    kind: str                       # a key of gpufleet.work.kinds.KINDS
    pool: str
    nodes: Tuple[str, ...]
    reason: str                     # why, in words a person reads in the decision log
    job_id: Optional[str] = None
    gang_id: Optional[str] = None
    replaces: Optional[str] = None  # substitute (or a replacing resume): the member it replaces
    target_tier: Optional[str] = None   # park/hold/rollback/readmit: the tier the nodes go to;
    #                                     bringup: hot, or warm (bring up then park)
    deadline_at: Optional[float] = None  # reserve: the gang's deadline; wake/bringup/substitute
    #                                      for a gang: that member's own deadline
    jobs: Tuple[str, ...] = ()      # requeue: the jobs requeued
    peers: Tuple[str, ...] = ()     # recycle: its fabric peers
    record: Optional[dict] = field(default=None, hash=False)   # break_fix: the technician's record
    blocked: str = ""               # why it must not start: recorded, not run
    # "replace, then repair": the reservation (JOB@EPOCH) a replacement is resumed in and bound
    # to once its job is pending again, its nodes (the job's survivors and the spare) and the
    # job's failed members the spares replace (taken out of the job's own gang reservation)
    reservation: str = ""
    reserve_nodes: Tuple[str, ...] = ()
    release_nodes: Tuple[str, ...] = ()
    rollout: dict = field(default_factory=dict, hash=False)   # the extra the rollout book folds back
    image: dict = field(default_factory=dict, hash=False)     # the image variables its recycle installs
    stage: str = CAPACITY           # one of STAGES
