#!/usr/bin/env python3
"""One fit of the learned forecaster (gpufleet.capacity.learned.fit) on per-minute history.

    .venv/bin/python benchmarks/capacity/bench_learn.py              # two weeks, one pool
    .venv/bin/python benchmarks/capacity/bench_learn.py --days 28 --runs 3

The demand is a seeded synthetic series (a daily and weekly cycle plus noise, one sample a
minute), so every run fits the same input. Wall time: median (min, max) of --runs fits; building
the series is not timed. This is what the controller's refit costs per pool (gpufleet.controller
.learning). Prints one JSON line.
"""
import argparse
import json
import math
import random
import statistics
import time

from gpufleet.capacity import learned
from gpufleet.capacity.model import DemandSample
from gpufleet.capacity.policy import Forecast

START = 1_800_000_000.0


def series(days, seed):
    rng = random.Random(seed)
    out = []
    for i in range(int(days * 1440)):
        t = START + 60.0 * i
        day = math.sin(2 * math.pi * (t % 86400) / 86400)
        weekend = 0.5 if ((t / 86400 + 3) % 7) >= 5 else 1.0
        gpus = max(0, int(200 * weekend * (1 + 0.6 * day) + rng.gauss(0, 15)))
        out.append(DemandSample(pool="p", minute=t, gpus_running=gpus, gpus_pending=0, gpus_pending_capacity=0))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=float, default=14.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    samples = series(args.days, args.seed)
    forecast = Forecast(enabled=True, method="learned")
    split = samples[-1].minute + 60.0
    times, model = [], None
    for _ in range(args.runs):
        began = time.perf_counter()
        model = learned.fit(samples, forecast, split)
        times.append(time.perf_counter() - began)
    print(json.dumps({"days": args.days, "samples": len(samples), "training_points": model.points,
                      "runs": args.runs, "fit_s_median": round(statistics.median(times), 3),
                      "fit_s_min": round(min(times), 3), "fit_s_max": round(max(times), 3)}))


if __name__ == "__main__":
    main()
