"""``why JOB``: the lowest layer that keeps a job from running, with its evidence.

Order: L4 when the job runs; for a job whose failed member day-2 replaced (replace, then
repair: ``gpufleet.day2.bindings``), L2 while the controller binds it to its replacement's
reservation and L3 once it waits there for Slurm; L1 when the pool cannot supply the nodes at
all (no pool, too few owned, too many unavailable); L3 when enough idle schedulable nodes exist
(Slurm's own reason decides); otherwise L2 (nodes exist but are not ready yet).
"""
from gpufleet.day2 import bindings
from gpufleet.view import slurm_reasons
from gpufleet.view.answer import Answer, duration
from gpufleet.view.seam import by_node
from gpufleet.view.supply import pool_now
from gpufleet.view.waiting import on_their_way

__all__ = ["why_job", "find_job"]

_UNAVAILABLE = ("failed", "break_fix", "not_enrolled")


def find_job(inputs, job_id):
    return next((job for job in inputs.jobs if str(job.job_id) == str(job_id)), None)


def _slurm_line(job, extra):
    group, words = slurm_reasons.explain(job.reason or "None")
    text = "Slurm's reason: %s (%s)" % (job.reason or "None", words)
    if job.reason == "Dependency" and extra.get("dependency"):
        text += "; dependency %s" % extra["dependency"]
    return group, text


def _running(inputs, job, extra):
    start = extra.get("start_time")
    evidence = ["runs on %s" % (", ".join(job.nodes_assigned) or "nodes Slurm did not list")]
    if start:
        evidence.append("running for %s" % duration(inputs.now - start))
    return Answer(job.job_id, "job", "L4", False, "the job runs: workload layer",
                  tuple(evidence), {"nodes": list(job.nodes_assigned), "start_time": start})


def _unavailable_lines(nodes, now):
    """One line per unavailable category: how many, which, since when (the oldest)."""
    lines = []
    for category in _UNAVAILABLE:
        mine = [n for n in nodes if n["category"] == category]
        if mine:
            since = [n["since"] for n in mine if n["since"] is not None]
            lines.append("%d %s (%s)%s" % (
                len(mine), category.replace("_", " "), ", ".join(n["node"] for n in mine),
                "; the oldest since %s ago" % duration(now - min(since)) if since else ""))
    return lines


def _supply_answer(inputs, job, pool, nodes):
    """L1 answers, or None when the pool can supply the job's nodes."""
    owned = [n for n in nodes if n["category"] != "decommissioned"]
    need = job.nodes
    if len(owned) < need:
        gone = len(nodes) - len(owned)
        return Answer(job.job_id, "job", "L1", True,
                      "the job needs %d nodes of pool %s (%s) and the pool owns %d" % (
                          need, pool.name, pool.sku, len(owned)),
                      ("pool %s owns %d nodes of SKU %s%s" % (pool.name, len(owned), pool.sku,
                                                          " (%d decommissioned)" % gone if gone else ""),
                       "add %d nodes of SKU %s to the pool, or submit for at most %d nodes"
                       % (need - len(owned), pool.sku, len(owned))),
                      {"pool": pool.name, "needed": need, "owned": len(owned)})
    usable = [n for n in owned if n["category"] not in _UNAVAILABLE]
    if len(usable) < need:
        return Answer(job.job_id, "job", "L1", True,
                      "the job needs %d nodes of pool %s; %d of its %d are unavailable" % (
                          need, pool.name, len(owned) - len(usable), len(owned)),
                      tuple(_unavailable_lines(owned, inputs.now)),
                      {"pool": pool.name, "needed": need, "owned": len(owned), "usable": len(usable)})
    return None


def _scheduling_answer(job, pool, fit, extra):
    group, slurm_line = _slurm_line(job, extra)
    names = ", ".join(n["node"] for n in fit)
    if group == "capacity":
        summary = ("Slurm reports %s although %d idle nodes of pool %s fit: compare the job's "
                   "features/GRES with the nodes' or wait for the next scheduling pass"
                   % (job.reason, len(fit), pool.name))
    else:
        summary = "capacity exists; Slurm holds the job: %s" % slurm_reasons.explain(job.reason)[1]
    return Answer(job.job_id, "job", "L3", True, summary,
                  (slurm_line, "%d idle schedulable nodes would fit: %s" % (len(fit), names)),
                  {"pool": pool.name, "reason": job.reason, "nodes_that_fit": [n["node"] for n in fit]})


def _replacement_answer(inputs, job, extra):
    """The answer for a pending job whose failed member was replaced, or None: day-2 reserved
    its surviving nodes and a spare for it; the planner leaves it alone until the bind ran."""
    replacements = bindings.fold(inputs.decisions)
    item = next((r for r in sorted(replacements.values(), key=lambda r: r.reservation, reverse=True)
                 if r.job_id == str(job.job_id)), None)
    if item is None:
        return None
    details = {"reservation": item.reservation, "nodes": list(item.nodes), "replacement": list(item.spare)}
    reserved = "reservation %s: its surviving nodes and its replacement %s (%s)" % (
        item.reservation, ",".join(item.spare), ",".join(item.nodes))
    if job.job_id in bindings.awaiting_bind(replacements, (job,)):
        step = "in flight" if item.bound else "due on the controller's next pass"
        return Answer(job.job_id, "job", "L2", True,
                      "a member of this job failed and was replaced: the controller binds the job to its "
                      "replacement's reservation (bind %s)" % step,
                      (reserved, "the planner does not provision for the job meanwhile",
                       _slurm_line(job, extra)[1]), dict(details, bind=step))
    if job.reservation == item.reservation:
        return Answer(job.job_id, "job", "L3", True,
                      "bound to its replacement's reservation; Slurm holds the job: %s"
                      % slurm_reasons.explain(job.reason or "None")[1],
                      (reserved, _slurm_line(job, extra)[1]), dict(details, reason=job.reason))
    return None     # its bind is over (failed, or the reservation is gone): the planner's again


def why_job(inputs, job_id):
    """The Answer for one job (``LookupError`` when Slurm does not list it)."""
    job = find_job(inputs, job_id)
    if job is None:
        raise LookupError('Job "%s" is not in Slurm\'s queue (squeue --json). It finished, was '
                          'cancelled, or the id is wrong: sacct -j %s shows finished jobs.'
                          % (job_id, job_id))
    extra = inputs.job_extra.get(str(job.job_id), {})
    if job.state == "RUNNING":
        return _running(inputs, job, extra)
    replaced = _replacement_answer(inputs, job, extra)
    if replaced:
        return replaced
    if not job.pool or inputs.pool(job.pool) is None:
        return Answer(job.job_id, "job", "L1", True,
                      "no pool can serve this job (partition %s, features %s): it is never "
                      "provisioned for" % (job.partition or "-", ",".join(job.features) or "-"),
                      ("the policy maps jobs to pools by partition and features/GRES; add a pool "
                       "for them or resubmit to a partition a pool serves",), {"pool": job.pool})
    pool = inputs.pool(job.pool)
    transitions = by_node(inputs.transitions)
    nodes = pool_now(inputs, pool, transitions)
    answer = _supply_answer(inputs, job, pool, nodes)
    if answer:
        return answer
    fit = [n for n in nodes if n["category"] == "idle"]
    if len(fit) >= job.nodes:
        return _scheduling_answer(job, pool, fit, extra)
    evidence, details = on_their_way(inputs, job, pool, nodes, transitions)
    evidence.append(_slurm_line(job, extra)[1])
    details.update(pool=pool.name, needed=job.nodes, idle=len(fit))
    return Answer(job.job_id, "job", "L2", True,
                  "the job needs %d nodes of pool %s; %d of them are schedulable and idle, the "
                  "others are not ready yet" % (job.nodes, pool.name, len(fit)), tuple(evidence), details)
