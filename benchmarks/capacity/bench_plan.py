#!/usr/bin/env python3
"""One capacity planning pass over a large synthetic fleet: wall time and peak memory.

    .venv/bin/python benchmarks/capacity/bench_plan.py        # 10,000 nodes, 50 pools, 2,000 jobs
    .venv/bin/python benchmarks/capacity/bench_plan.py --forecast-weeks 4   # + 4 weeks of history

The fleet, jobs, gangs in progress and in-flight work are generated from a seed, so every run
plans the same inputs. Wall time: median (and min, max) of --runs passes of ``plan``; building
the inputs is not timed. Peak memory: tracemalloc's peak during one pass (what the pass
allocates) and the process's ru_maxrss (everything, inputs included). Prints one JSON line.
"""
import argparse
import json
import random
import resource
import statistics
import time
import tracemalloc

from gpufleet.capacity.model import (BUSY, COLD, HOT, IDLE, PROVISIONING, UNAVAILABLE, WARM,
                                     Action, Demand, DemandSample, Gang, GangMember, Job,
                                     NodeView, Supply)
from gpufleet.capacity.planner import plan
from gpufleet.capacity.policy import Policy

NOW = 1_800_000_000.0
TIER_STATES = [(BUSY, "joined", 40), (IDLE, "joined", 10), (HOT, "hot", 8), (WARM, "parked", 15),
               (COLD, "enrolled", 20), (PROVISIONING, "imaging", 1), (UNAVAILABLE, "failed", 3)]


def make_policy(pools, forecast):
    spec = {}
    for p in range(pools):
        spec[f"pool{p:02d}"] = {
            "sku": f"sku{p % 5}", "members": {"patterns": [f"pool{p:02d}-*"]},
            "match": {"partitions": [f"part{p:02d}"], "features": [f"f{p % 7}"]},
            "floors": {"hot": 4, "warm": 10}, "ceilings": {"hot": 40, "warm": 120},
            "max_concurrent_bringups": 16, "gang_deadline": "1h", "idle_time": "15m",
            "estimates": {"warm": "5m", "cold": "30m"},
            "schedules": [{"name": "workday", "days": ["mon", "tue", "wed", "thu", "fri"],
                           "start": "08:00", "end": "20:00", "timezone": "Europe/Berlin",
                           "floors": {"hot": 6, "warm": 12}}],
            "forecast": {"enabled": forecast, "lookback_weeks": 4, "lead_time": "30m"},
        }
    return Policy.model_validate({"fleet": {"concurrency_limit": 400}, "pools": spec})


def make_fleet(rng, nodes, pools):
    tiers = [t for t, _, weight in TIER_STATES for _ in range(weight)]
    states = {t: s for t, s, _ in TIER_STATES}
    fleet = []
    for i in range(nodes):
        pool = f"pool{i % pools:02d}"
        tier = rng.choice(tiers)
        fleet.append(NodeView(
            node=f"{pool}-n{i:05d}", pool=pool, tier=tier, state=states[tier],
            since=NOW - rng.randint(0, 7200), idle_since=NOW - rng.randint(0, 3600),
            gate_passed_at=NOW - 3600, consecutive_failures=rng.randint(0, 2),
            jobs=(f"r{i}",) if tier == BUSY else ()))
    return fleet


def make_jobs(rng, count, pools):
    jobs = []
    for i in range(count):
        p = rng.randrange(pools)
        size = rng.choice([1] * 8 + [2, 4, 8])
        jobs.append(Job(job_id=str(100000 + i), nodes=size, gpus_per_node=8,
                        partition=f"part{p:02d}", features=(f"f{p % 7}",),
                        submit_time=NOW - rng.randint(0, 3600), reason="Resources"))
    return jobs


def make_gangs_and_flight(rng, fleet, jobs):
    """One gang in progress per pool for its first gang job, and some in-flight bring-ups."""
    by_pool = {}
    for node in fleet:
        if node.tier in (HOT, PROVISIONING):
            by_pool.setdefault(node.pool, []).append(node.node)
    gangs, seen = [], set()
    for job in jobs:
        pool = "pool" + job.partition[4:]
        free = by_pool.get(pool, [])
        if job.nodes > 1 and pool not in seen and len(free) >= job.nodes:
            seen.add(pool)
            members = tuple(GangMember(free.pop(), NOW + 600) for _ in range(job.nodes))
            gangs.append(Gang(f"g{job.job_id}", job.job_id, pool, job.nodes, NOW + 1800,
                              members))
    flight = [Action("bringup", n.pool, (n.node,), "in flight") for n in fleet
              if n.tier == COLD and rng.random() < 0.02]
    return tuple(gangs), tuple(flight)


def make_history(pools, weeks):
    history = {}
    for p in range(pools):
        start = NOW - weeks * 7 * 86400
        history[f"pool{p:02d}"] = [DemandSample(f"pool{p:02d}", start + m * 60,
                                                gpus_running=900 + (m * 7 + p) % 400)
                                   for m in range(weeks * 7 * 1440)]
    return history


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--pools", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--forecast-weeks", type=int, default=0,
                        help="give every pool this many weeks of per-minute history (0: none)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    policy = make_policy(args.pools, forecast=args.forecast_weeks > 0)
    fleet = make_fleet(rng, args.nodes, args.pools)
    jobs = make_jobs(rng, args.jobs, args.pools)
    gangs, flight = make_gangs_and_flight(rng, fleet, jobs)
    history = make_history(args.pools, args.forecast_weeks) if args.forecast_weeks else None
    demand, supply = Demand(tuple(jobs)), Supply(tuple(fleet), flight, gangs)

    walls = []
    for _ in range(args.runs):
        start = time.perf_counter()
        result = plan(demand, supply, policy, NOW, history)
        walls.append(time.perf_counter() - start)
    tracemalloc.start()
    plan(demand, supply, policy, NOW, history)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    kinds = {}
    for action in result.actions:
        kinds[action.kind] = kinds.get(action.kind, 0) + 1
    print(json.dumps({
        "nodes": args.nodes, "pools": args.pools, "jobs": args.jobs,
        "gangs_in_progress": len(gangs),
        "in_flight": len(flight), "forecast_weeks": args.forecast_weeks, "runs": args.runs,
        "wall_median_s": round(statistics.median(walls), 5), "wall_min_s": round(min(walls), 5),
        "wall_max_s": round(max(walls), 5), "tracemalloc_peak_mb": round(peak / 2**20, 1),
        "ru_maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "actions": len(result.actions), "action_kinds": dict(sorted(kinds.items())),
        "unservable": len(result.notes["unservable"]),
    }))


if __name__ == "__main__":
    main()
