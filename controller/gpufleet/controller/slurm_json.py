"""Pure parsers of ``squeue --json`` and ``sinfo --json`` (no I/O; the fixtures test them).

Two shapes exist in the field:

- Slurm 22.05 (Debian 12; openapi v0.0.38): ``job_state`` "PENDING", plain integers for
  times and counts, ``tres_per_node`` "gres:gpu:8"; ``sinfo`` lists ``nodes`` with a
  lower-case ``state`` and a separate ``state_flags`` list.
- Slurm 23.x and later (data_parser v0.0.39+): ``job_state`` ["PENDING"], numbers wrapped as
  ``{"set": true, "infinite": false, "number": N}``, ``tres_per_node`` "gres/gpu:8"; from
  23.11 ``sinfo`` lists grouped ``sinfo`` entries whose ``node.state`` is a list
  (["IDLE", "DRAIN"]) and whose ``nodes.nodes`` names the nodes.

Anything else fails closed: a SchedulerOutputError naming the field and the fix, never a
guess (a job we misread could be provisioned for, or a busy node parked).
"""
import json
import re
from dataclasses import dataclass, replace
from typing import Optional, Tuple

import hostlist

from gpufleet.capacity.model import Job
from gpufleet.controller.errors import SchedulerOutputError

__all__ = ["SlurmNode", "parse_squeue", "parse_sinfo", "expand_hostlist"]

# Job states the controller plans for; finished jobs (COMPLETED, CANCELLED...) are not demand.
_ACTIVE = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED")
_GPU = re.compile(r"^(?:gres[:/])?gpu(?::[^:,=]+)?[:=](\d+)")


@dataclass(frozen=True)
class SlurmNode:
    """One node as Slurm reports it: base state (upper case) and flags."""
    name: str
    state: str                      # IDLE, ALLOCATED, MIXED, DOWN, FUTURE, UNKNOWN, ERROR
    flags: Tuple[str, ...] = ()     # DRAIN, CLOUD, POWERED_DOWN, NOT_RESPONDING, ...
    reason: str = ""
    partitions: Tuple[str, ...] = ()
    features: Tuple[str, ...] = ()
    gres: str = ""
    last_busy: Optional[float] = None   # when it last ran a job (epoch seconds), if Slurm says


def _load(text, command, key):
    try:
        doc = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise SchedulerOutputError(
            "%s printed no JSON (%s). Check that the openapi plugin is installed (Debian: "
            "slurm-wlm-basic-plugins) and that the command works on the controller host." % (command, exc),
            command=command)
    if not isinstance(doc, dict):
        raise SchedulerOutputError("%s printed a JSON %s, not an object." % (command, type(doc).__name__),
                                   command=command)
    errors = [e for e in doc.get("errors") or [] if e]
    if errors:
        raise SchedulerOutputError("%s reported errors: %s" % (command, json.dumps(errors)[:500]), command=command)
    if key not in doc or not isinstance(doc[key], list):
        raise SchedulerOutputError(
            "%s output has no list %r (keys: %s): an unknown Slurm output shape. Supported: Slurm 22.05 "
            "(openapi v0.0.38) and the data_parser shapes of 23.x and later." % (command, key, ", ".join(sorted(doc))),
            command=command)
    return doc[key]


def _number(value, field, where):
    """An integer from a plain number or a {"set", "infinite", "number"} object; None if unset."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite"):
            return None
        value = value.get("number")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SchedulerOutputError("%s: field %r is %r, not a number." % (where, field, value), field=field)
    return value


def _states(value, field, where):
    """A state as a list of upper-case words (22.05 gives a string, later versions a list)."""
    if isinstance(value, str):
        return [value.upper()] if value else []
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v.upper() for v in value]
    raise SchedulerOutputError("%s: field %r is %r, neither a string nor a list of strings."
                               % (where, field, value), field=field)


def _require(record, field, where):
    if field not in record:
        raise SchedulerOutputError("%s has no field %r: an unknown Slurm output shape." % (where, field),
                                   field=field)
    return record[field]


def expand_hostlist(text, where="hostlist"):
    """'lab-r1n[1-2],x' -> ('lab-r1n1', 'lab-r1n2', 'x'); empty -> ()."""
    if not text:
        return ()
    try:
        return tuple(hostlist.expand_hostlist(text))
    except hostlist.BadHostlist as exc:
        raise SchedulerOutputError("%s: cannot expand host list %r (%s)." % (where, text, exc))


def _gpus(tres):
    """GPUs per node from a TRES request: 'gres:gpu:8' (22.05), 'gres/gpu:a100:8', 'gpu:8'."""
    for part in (tres or "").split(","):
        match = _GPU.match(part.strip())
        if match:
            return int(match.group(1))
    return 0


def _gres_names(tres):
    names = []
    for part in (tres or "").split(","):
        part = part.strip()
        for prefix in ("gres:", "gres/"):
            if part.startswith(prefix):
                part = part[len(prefix):]
        if part:
            names.append(part.split(":")[0].split("=")[0])
    return names


def _features(text):
    """Constraint expression 'gpu&a100|h100' -> ('a100', 'gpu', 'h100') (names only)."""
    return [f for f in re.split(r"[&|,()\[\]*\s]+", text or "") if f and not f.isdigit()]


def _job(record):
    job_id = _require(record, "job_id", "squeue job")
    where = "squeue job %s" % job_id
    states = _states(_require(record, "job_state", where), "job_state", where)
    nodes = _number(_require(record, "node_count", where), "node_count", where)
    if nodes is None or nodes < 1:
        raise SchedulerOutputError("%s: node_count %r is not a positive count." % (where, record.get("node_count")),
                                   field="node_count")
    submit = _number(_require(record, "submit_time", where), "submit_time", where) or 0
    tres = record.get("tres_per_node") or ""
    features = sorted(set(_features(record.get("features") or "") + _gres_names(tres)))
    return Job(job_id=str(job_id), nodes=int(nodes), gpus_per_node=_gpus(tres),
               partition=str(record.get("partition") or ""), features=tuple(features),
               submit_time=float(submit), state=states[0] if states else "",
               reason=str(record.get("state_reason") or ""),
               nodes_assigned=expand_hostlist(record.get("nodes") or "", where),
               reservation=str(record.get("resv_name") or ""))


def parse_squeue(text):
    """Active jobs (pending and running) from ``squeue --json``; pool is left to the policy."""
    jobs = []
    for record in _load(text, "squeue --json", "jobs"):
        if not isinstance(record, dict):
            raise SchedulerOutputError("squeue --json: a job entry is %r, not an object." % (record,))
        job = _job(record)
        if job.state in _ACTIVE:
            jobs.append(job)
    return tuple(jobs)


def _node_v38(record):
    where = "sinfo node %s" % record.get("name")
    name = _require(record, "name", "sinfo node")
    states = _states(_require(record, "state", where), "state", where)
    flags = _states(record.get("state_flags") or [], "state_flags", where)
    return [SlurmNode(name=name, state=states[0] if states else "UNKNOWN", flags=tuple(sorted(set(flags))),
                      reason=str(record.get("reason") or ""),
                      partitions=tuple(record.get("partitions") or ()),
                      features=tuple(_features(record.get("active_features") or record.get("features") or "")),
                      gres=str(record.get("gres") or ""),
                      last_busy=_number(record.get("last_busy"), "last_busy", where))]


def _node_grouped(entry):
    """One 23.11+ ``sinfo`` entry: several nodes sharing one state and partition."""
    where = "sinfo entry"
    names = _require(_require(entry, "nodes", where), "nodes", where + " nodes")
    states = _states(_require(_require(entry, "node", where), "state", where + " node"), "node.state", where)
    partition = (entry.get("partition") or {}).get("name")
    features = entry.get("features") or {}
    reason = entry.get("reason") or ""
    if isinstance(reason, dict):
        reason = reason.get("description") or ""
    return [SlurmNode(name=n, state=states[0] if states else "UNKNOWN", flags=tuple(sorted(set(states[1:]))),
                      reason=str(reason), partitions=(partition,) if partition else (),
                      features=tuple(_features(features.get("active") or features.get("total") or "")),
                      gres=str((entry.get("gres") or {}).get("total") or ""))
            for n in names]   # grouped entries carry no per-node last_busy


def parse_sinfo(text):
    """Node name -> SlurmNode from ``sinfo --json`` (either shape); partitions are merged."""
    try:
        records, grouped = _load(text, "sinfo --json", "nodes"), False
    except SchedulerOutputError:
        records, grouped = _load(text, "sinfo --json", "sinfo"), True
    nodes = {}
    for record in records:
        if not isinstance(record, dict):
            raise SchedulerOutputError("sinfo --json: a node entry is %r, not an object." % (record,))
        for node in (_node_grouped(record) if grouped else _node_v38(record)):
            seen = nodes.get(node.name)
            if seen:
                node = replace(node, partitions=tuple(sorted(set(seen.partitions + node.partitions))))
            nodes[node.name] = node
    return nodes
