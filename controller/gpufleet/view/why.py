"""``why SUBJECT``: a job id, a node name or a pool name, answered at the blocking layer."""
from gpufleet.view.why_job import find_job, why_job
from gpufleet.view.why_node import known_node, why_node
from gpufleet.view.why_pool import why_pool

__all__ = ["why", "resolve"]


def resolve(inputs, subject):
    """'job', 'node' or 'pool' for ``subject`` (a job id wins, then a pool, then a node)."""
    if find_job(inputs, subject) is not None:
        return "job"
    if inputs.pool(subject) is not None:
        return "pool"
    if known_node(inputs, subject):
        return "node"
    raise LookupError('"%s" is not a job in Slurm\'s queue, a pool of the policy or a known '
                      'node. Pass a job id, a node name or a pool name.' % subject)


def why(inputs, subject, kind=None):
    kind = kind or resolve(inputs, subject)
    return {"job": why_job, "node": why_node, "pool": why_pool}[kind](inputs, subject)
