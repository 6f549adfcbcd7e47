"""Slurm's ``squeue --json`` and ``sinfo --json`` into the planner's Job and ``SlurmNode``.

Slurm 22.05 (openapi v0.0.38) writes plain values (``"job_state": "PENDING"``,
``"node_count": 4``, node ``"state": "idle"`` plus ``"state_flags"``); 23.02 and later
write lists and ``{"set", "infinite", "number"}`` objects. Both are read. Anything else
fails closed with ``SlurmJsonError`` naming the field.

Wiring note: the controller's Slurm reader (gpufleet.controller) fills the same Job type;
when it lands, ``sources`` should call it and this file keeps only what the view adds
(start time, dependency, hostlist expansion of running jobs' nodes).
"""
import json
import re

from gpufleet.capacity.model import Job
from gpufleet.view.inputs import SlurmNode

__all__ = ["SlurmJsonError", "parse_squeue", "parse_sinfo", "expand_hostlist"]


class SlurmJsonError(ValueError):
    pass


def _number(value, field, where):
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite"):
            return None
        value = value.get("number")
    if value is None or isinstance(value, (int, float)):
        return value
    raise SlurmJsonError("%s: field %s is %r, expected a number or {set, number}. "
                         "Is this squeue/sinfo --json of Slurm 22.05 or later?" % (where, field, value))


def _words(value):
    if isinstance(value, list):
        return [str(v) for v in value]
    return [w for w in re.split(r"[+,\s]+", value or "") if w]


def expand_hostlist(text):
    """``"n[1-3,07],m5"`` -> ``["n1", "n2", "n3", "n07", "m5"]``."""
    names = []
    for prefix, ranges, plain in re.findall(r"([^,\[]+)\[([^\]]+)\]|([^,\[\]]+)", text or ""):
        if plain:
            names.append(plain)
            continue
        for part in ranges.split(","):
            lo, _sep, hi = part.partition("-")
            width = len(lo)
            for number in range(int(lo), int(hi or lo) + 1):
                names.append("%s%0*d" % (prefix, width, number))
    return names


def _gpus(job):
    text = job.get("tres_per_node") or job.get("gres_detail") or ""
    text = ",".join(text) if isinstance(text, list) else str(text)
    match = re.search(r"gpu(?::[\w-]+)?:(\d+)", text)
    return int(match.group(1)) if match else 0


def _job(item, pool_of_partition):
    where = "squeue job %s" % item.get("job_id")
    state = _words(item.get("job_state"))
    if not state or item.get("job_id") is None:
        raise SlurmJsonError("%s: job_id or job_state is missing." % where)
    partition = item.get("partition") or ""
    pool = next((pool_of_partition[p] for p in partition.split(",") if p in pool_of_partition), None)
    return Job(job_id=str(item["job_id"]), nodes=_number(item.get("node_count"), "node_count", where) or 1,
               gpus_per_node=_gpus(item), partition=partition,
               features=tuple(w for w in re.split(r"[&|,]", item.get("features") or "") if w),
               submit_time=float(_number(item.get("submit_time"), "submit_time", where) or 0),
               state=state[0], reason=item.get("state_reason") or "", pool=pool,
               nodes_assigned=tuple(expand_hostlist(item.get("nodes") or "")))


def parse_squeue(text, pool_of_partition):
    """(jobs, extras) from squeue --json text; ``pool_of_partition`` maps partition -> pool."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SlurmJsonError("squeue --json output is not JSON (%s)." % exc)
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
        raise SlurmJsonError('squeue --json output has no "jobs" list.')
    jobs, extras = [], {}
    for item in data["jobs"]:
        job = _job(item, pool_of_partition)
        if job.state not in ("PENDING", "RUNNING"):
            continue
        jobs.append(job)
        where = "squeue job %s" % job.job_id
        extras[job.job_id] = {"start_time": _number(item.get("start_time"), "start_time", where),
                              "dependency": item.get("dependency") or "",
                              "qos": item.get("qos") or "", "reservation": item.get("reservation") or ""}
    return tuple(jobs), extras


def parse_sinfo(text):
    """{name: SlurmNode} from sinfo --json text."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SlurmJsonError("sinfo --json output is not JSON (%s)." % exc)
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        raise SlurmJsonError('sinfo --json output has no "nodes" list.')
    out = {}
    for item in data["nodes"]:
        name = item.get("name") or item.get("hostname")
        words = _words(item.get("state")) + _words(item.get("state_flags"))
        if not name or not words:
            raise SlurmJsonError("sinfo node %r: name or state is missing." % name)
        out[name] = SlurmNode(name, frozenset(w.upper() for w in words), item.get("reason") or "",
                              tuple(_words(item.get("partitions"))))
    return out
