"""Slurm's pending reasons in words, grouped the way ``why`` reports them at L3.

The reason codes are Slurm's (squeue(1), JOB REASON CODES); the groups are ours.
"""
__all__ = ["explain", "CAPACITY_REASONS"]

# Reasons that mean "not enough nodes": capacity (L1/L2) decides these, not Slurm policy.
CAPACITY_REASONS = ("Resources", "Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_priority_partitions",
                    "ReqNodeNotAvail", "PartitionNodeLimit", "NodeDown", "PowerNotAvail")

_EXACT = {
    "Priority": "other jobs of higher priority are ahead of it in the queue",
    "Dependency": "it waits for a job it depends on to finish",
    "DependencyNeverSatisfied": "its dependency can never be satisfied (the job it waits for failed); cancel or fix the dependency",
    "BeginTime": "its earliest start time has not been reached",
    "JobHeldUser": "its owner holds it (scontrol release JOBID)",
    "JobHeldAdmin": "an administrator holds it (scontrol release JOBID)",
    "Reservation": "it waits for its advanced reservation to start",
    "PartitionDown": "its partition is down",
    "PartitionInactive": "its partition is inactive",
    "PartitionTimeLimit": "its time limit exceeds the partition's",
    "Licenses": "it waits for a license",
    "Resources": "Slurm finds no free nodes that match it",
    "None": "Slurm has not evaluated it yet (next scheduling pass)",
}


def explain(reason):
    """(group, words) for a Slurm pending reason."""
    if reason in _EXACT:
        group = "policy" if reason not in CAPACITY_REASONS else "capacity"
        return group, _EXACT[reason]
    if reason.startswith("QOS"):
        return "limits", "a QOS limit holds it (%s): see sacctmgr show qos" % reason
    if reason.startswith("Assoc"):
        return "limits", "an association limit holds it (%s): see sacctmgr show assoc" % reason
    if reason.startswith(("ReqNodeNotAvail", "Nodes_required")):
        return "capacity", "nodes it needs are down, drained or reserved (%s)" % reason
    return "other", "Slurm reports %s" % (reason or "no reason")
