"""Node failures during the replayed window, hot spares and "replace, then repair".

Exposure: at each trace sample the jobs the demand levels make (gpufleet.simulate.workload,
every job counted as running) hold busy nodes. Failures arrive as a Poisson process over busy
node-seconds, with a node MTBF of ``mtbf_gpu_hours / gpus_per_node``, drawn from a seeded RNG;
the failing node is picked uniformly among the busy ones, so a job fails in proportion to its
nodes.

Replace, then repair: the failed member is replaced from a pool of ``spares`` hot nodes and
the failed node is repaired (``repair_s``) and becomes a hot spare again. With a spare free,
the replacement takes one ``hot`` latency (resume); with none, the job waits until the next
repaired node comes back, then the ``hot`` latency. The whole job stalls while its member is
replaced (a gang cannot run short of a rank). Goodput = (GPU-hours asked - GPU-hours stalled)
/ GPU-hours asked, with GPU-hours asked the trace's demand over the window.
"""
import heapq
import math
import random

from gpufleet.simulate.errors import SimulateError
from gpufleet.simulate.workload import Workload

__all__ = ["FailureModel", "simulate_failures", "spare_sweep", "exposure", "MTBF_GPU_HOURS", "REPAIR_S",
           "TARGET_S", "MAX_SPARES"]

# Llama 3 (Meta, 2024): 419 unexpected interruptions in 54 days on 16,384 GPUs: a 16k-GPU job is
# interrupted about every 3 hours, so one GPU (with its share of host, network) about every
# 54 * 24 * 16384 / 419 = 50,677 h; rounded down to 48,000 h.
MTBF_GPU_HOURS = 48000.0
# The lab's day-2 repair of a hot node (docs/benchmarks.md, NHC-style drain): drain 3 s,
# recycle (reimage + full gate, with a fabric peer) 108 s, readmit 3 s.
REPAIR_S = 114.0
TARGET_S = 90.0          # the replacement time a spare pool is sized for
MAX_SPARES = 64          # the sweep's upper end: beyond it the answer is "more than 64"


class FailureModel:
    def __init__(self, mtbf_gpu_hours=MTBF_GPU_HOURS, repair_s=REPAIR_S, seed=1):
        if not (isinstance(mtbf_gpu_hours, (int, float)) and math.isfinite(mtbf_gpu_hours) and mtbf_gpu_hours > 0):
            raise SimulateError("--mtbf-gpu-hours %r: give the per-GPU mean time between failures in hours "
                                "(above 0; default %g)." % (mtbf_gpu_hours, MTBF_GPU_HOURS))
        if not (isinstance(repair_s, (int, float)) and math.isfinite(repair_s) and repair_s >= 0):
            raise SimulateError("--repair %r: give the repair time in seconds >= 0 (default %g)."
                                % (repair_s, REPAIR_S))
        self.mtbf_gpu_hours, self.repair_s, self.seed = float(mtbf_gpu_hours), float(repair_s), seed

    def describe(self):
        return {"mtbf_gpu_hours": self.mtbf_gpu_hours, "repair_s": self.repair_s, "seed": self.seed}


def exposure(trace, gpus_per_node, pool="gpu"):
    """Per sample: (time, seconds it holds, [(job GPUs, job nodes), ...] of the live jobs)."""
    workload = Workload(gpus_per_node, pool)
    times = trace.times
    out = []
    for i, now in enumerate(times):
        workload.update(now, trace.gang_gpus[i], trace.small_gpus[i])
        held = (times[i + 1] if i + 1 < len(times) else now + trace.step) - now
        out.append((now, held, [(job.gpus, job.nodes) for stack in workload.stacks.values() for job in stack]))
    return out


def draw(exposed, gpus_per_node, model):
    """The failures: [(time, GPUs of the job that lost a member)], seeded."""
    rng = random.Random(model.seed)
    node_mtbf_s = model.mtbf_gpu_hours * 3600.0 / gpus_per_node
    failures = []
    until = rng.expovariate(1.0 / node_mtbf_s)      # busy node-seconds from here to the next failure
    for now, held, jobs in exposed:
        busy = sum(nodes for _, nodes in jobs)
        span = busy * held
        while busy and until <= span:
            pick = rng.randrange(busy)
            for gpus, nodes in jobs:
                if pick < nodes:
                    failures.append((now + until / busy, gpus))
                    break
                pick -= nodes
            until += rng.expovariate(1.0 / node_mtbf_s)
        until -= span
    return failures


def replacements(failures, spares, repair_s, hot_latency):
    """Seconds from each failure until its job runs again: the wait for a free spare (or the next
    repaired node) plus the ``hot_latency`` sample for that failure."""
    free, back, out = spares, [], []
    for (at, _), resume in zip(failures, hot_latency):
        while back and back[0] <= at:
            heapq.heappop(back)
            free += 1
        heapq.heappush(back, at + repair_s)       # the failed node is repaired, then a spare
        if free:
            free -= 1
            wait = 0.0
        else:
            wait = heapq.heappop(back) - at
        out.append(wait + resume)
    return out


def _percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def summarize(failures, times, asked_gpu_h):
    stalled = sum(gpus * seconds for (_, gpus), seconds in zip(failures, times)) / 3600.0
    out = {"failures": len(failures), "gpu_hours_asked": round(asked_gpu_h, 1),
           "gpu_hours_stalled": round(stalled, 2),
           "goodput": round((asked_gpu_h - stalled) / asked_gpu_h, 6) if asked_gpu_h else None}
    if times:
        out["replacement_s"] = {"p50": round(_percentile(times, 0.5), 1), "p90": round(_percentile(times, 0.9), 1),
                                "max": round(max(times), 1)}
    else:
        out["replacement_s"] = None
    return out


def _inputs(trace, gpus_per_node, latency, model):
    exposed = exposure(trace, gpus_per_node)
    failures = draw(exposed, gpus_per_node, model)
    # one hot-latency sample per failure, from its own seeded stream: every spare count of a
    # sweep sees the same failures and the same resume times
    rng = random.Random(model.seed + 1)
    resume = [latency.paths["hot"].sample(rng) for _ in failures]
    asked = sum(held * sum(gpus for gpus, _ in jobs) for _, held, jobs in exposed) / 3600.0
    return failures, resume, asked


def simulate_failures(trace, gpus_per_node, latency, model, spares):
    """Goodput and replacement times with ``spares`` hot spares."""
    failures, resume, asked = _inputs(trace, gpus_per_node, latency, model)
    out = summarize(failures, replacements(failures, spares, model.repair_s, resume), asked)
    out["spares"] = spares
    return out


def spare_sweep(trace, gpus_per_node, latency, model, target_s=TARGET_S, max_spares=MAX_SPARES):
    """The smallest spare pool whose slowest replacement is at or under ``target_s``; -> (size or
    None when even ``max_spares`` misses, [(spares, max replacement s)] tried)."""
    failures, resume, _ = _inputs(trace, gpus_per_node, latency, model)
    tried = []
    for spares in range(0, max_spares + 1):
        times = replacements(failures, spares, model.repair_s, resume)
        slowest = max(times) if times else 0.0
        tried.append((spares, round(slowest, 1)))
        if slowest <= target_s:
            return spares, tried
    return None, tried
