"""``why POOL``: the pool's supply now and the answer for each of its pending jobs."""
from gpufleet.view.answer import Answer
from gpufleet.view.categories import CATEGORIES, LAYERS
from gpufleet.view.seam import by_node
from gpufleet.view.supply import pool_now
from gpufleet.view.why_job import why_job

__all__ = ["why_pool"]


def why_pool(inputs, name):
    pool = inputs.pool(name)
    if pool is None:
        raise LookupError('Pool "%s" is not in the policy. Pools: %s.'
                          % (name, ", ".join(p.name for p in inputs.pools) or "none"))
    nodes = pool_now(inputs, pool, by_node(inputs.transitions))
    counts = dict((c, 0) for c in CATEGORIES + ("decommissioned",))
    for node in nodes:
        counts[node["category"]] += 1
    supply = ", ".join("%d %s" % (n, c.replace("_", " ")) for c, n in counts.items() if n)
    pending = [j for j in inputs.jobs if j.pool == name and j.state == "PENDING"]
    answers = [why_job(inputs, j.job_id) for j in pending]
    blocked = [a for a in answers if a.blocking]
    layers = dict((layer, [a.subject for a in blocked if a.layer == layer]) for layer in LAYERS)
    evidence = ["nodes: %s" % (supply or "none")]
    evidence += ["job %s: %s %s" % (a.subject, a.layer, a.summary) for a in answers]
    details = {"nodes": counts, "jobs_by_layer": layers, "pending": [j.job_id for j in pending]}
    if not blocked:
        return Answer(name, "pool", None, False, "no pending job of pool %s is blocked" % name,
                      tuple(evidence), details)
    lowest = min(a.layer for a in blocked)
    return Answer(name, "pool", lowest, True,
                  "%d pending jobs of pool %s; the lowest blocking layer is %s (jobs %s)" % (
                      len(pending), name, lowest, ", ".join(layers[lowest])), tuple(evidence), details)
