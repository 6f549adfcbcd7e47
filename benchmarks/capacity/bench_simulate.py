#!/usr/bin/env python3
"""Benchmark: a month of per-minute demand through the simulator for a 1,000-node pool.

Replays the Helios month (../shared/fixtures/traces, or --trace) with its demand scaled to fill
the pool, through the real planner, and prints one JSON line: wall time, planning passes, the
share of time inside plan(), and the machine load before and after. docs/benchmarks.md
("Simulator") records the results with this command. No timed asserts anywhere.

    .venv/bin/python benchmarks/capacity/bench_simulate.py --policy benchmarks/capacity/policy-1000.yml
"""
import argparse
import cProfile
import json
import os
import pstats
import time

import gpufleet  # noqa: F401  (installs the collection loader)
from gpufleet.simulate import compare, latency, policies, trace as traces

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRACE = os.path.normpath(os.path.join(ROOT, "..", "shared", "fixtures", "traces", "helios-earth-vc6YE-2020-05.csv"))


def _load():
    with open("/proc/loadavg") as handle:
        return float(handle.read().split()[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default=TRACE)
    parser.add_argument("--policy", default=os.path.join(ROOT, "benchmarks", "capacity", "policy-1000.yml"))
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--scale", type=float, default=None, help="demand multiplier (default: peak demand = 90%% of the pool)")
    parser.add_argument("--profile", help="write the top functions by cumulative time to this file")
    args = parser.parse_args()

    from gpufleet.simulate.engine import default_plan
    plan = default_plan()   # what gpufleet simulate calls: plan() with its NodeIndex
    spent = [0.0]

    def timed_plan(*a, **kw):
        began = time.perf_counter()
        try:
            return plan(*a, **kw)
        finally:
            spent[0] += time.perf_counter() - began

    load_before = _load()
    began = time.perf_counter()
    raw = traces.read_trace(args.trace)
    run = policies.load(args.policy)
    gpn = policies.pool_of(run.policy)[1].gpus_per_node
    peak = max(g + s for g, s in zip(raw.gang_gpus, raw.small_gpus))
    scale = args.scale or (0.9 * args.nodes * gpn / peak)
    trace = traces.select(raw, scale=scale)
    read_s = time.perf_counter() - began
    profiler = cProfile.Profile() if args.profile else None
    if profiler:
        profiler.enable()
    result = compare.run_policy(trace, run, latency.load_latency, args.nodes, plan=timed_plan)
    if profiler:
        profiler.disable()
        with open(args.profile, "w") as out:
            pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(40)
    wall = time.perf_counter() - began
    m = result["metrics"]
    print(json.dumps({
        "nodes": args.nodes, "samples": len(trace), "scale": round(scale, 3), "policy": os.path.basename(args.policy),
        "wall_s": round(wall, 2), "read_s": round(read_s, 2), "plan_s": round(spent[0], 2),
        "simulator_s": round(wall - read_s - spent[0], 2), "planning_passes": m["planning_passes"],
        "plan_ms_per_pass": round(1000 * spent[0] / max(m["planning_passes"], 1), 3),
        "shortfall_gpu_minutes": m["shortfall_gpu_minutes"], "partial_starts": m["partial_starts"],
        "load_before": load_before, "load_after": _load(), "profiled": bool(profiler),
    }))


if __name__ == "__main__":
    main()
