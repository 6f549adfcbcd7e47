"""Several policies over one trace, and the sweep behind the trade-off curve.

Every run replays the same trace with the same latency seed (common random numbers), so the
differences between rows come from the policies. The sweep changes one policy field over a
range of values; ``tradeoff`` then finds, for each shortfall target, the smallest value that
meets it and what that costs in idle-but-powered GPU-hours.
"""
from gpufleet.capacity import model
from gpufleet.simulate import policies
from gpufleet.simulate.engine import Simulation
from gpufleet.simulate.errors import SimulateError
from gpufleet.simulate.fleet import check_nodes
from gpufleet.simulate.forecasting import fit_pool
from gpufleet.simulate.report import idle_cost

__all__ = ["run_policy", "parse_sweep", "sweep", "tradeoff", "DEFAULT_TARGET_FRACTIONS", "MAX_SWEEP_POINTS"]

DEFAULT_TARGET_FRACTIONS = (1.0, 0.5, 0.25, 0.1, 0.05, 0.01, 0.0)
MAX_SWEEP_POINTS = 1000     # one full run each: more is a typo in START:STOP:STEP, not a study


def run_policy(trace, run, latency_factory, nodes, gpus_per_node=None, pool=None, initial_tier=model.WARM,
               interval=None, plan=None, prior=(), forecasters=None):
    """Simulate one PolicyRun; returns {"name", "policy", "overrides", "pool", "metrics", "intervals", "series"}."""
    check_nodes(nodes)
    name, pool_cfg = policies.pool_of(run.policy, pool)
    gpn = pool_cfg.gpus_per_node
    if gpus_per_node is not None and gpus_per_node != gpn:
        raise SimulateError("--gpus-per-node %d differs from pools.%s.gpus_per_node (%d) in %s. Drop the option or "
                            "fix the policy." % (gpus_per_node, name, gpn, run.source))
    partition = pool_cfg.match.partitions[0] if pool_cfg.match.partitions else ""
    step = run.policy.fleet.interval if interval is None else interval
    if forecasters is None:     # forecast.method learned: fitted on the history before the window
        forecasters = fit_pool(pool_cfg, name, prior, trace.times[0])
    sim = Simulation(trace, run.policy, latency_factory(), name, nodes, gpn, interval=step,
                     initial_tier=initial_tier, partition=partition, plan=plan, prior=prior,
                     forecasters=forecasters)
    metrics = sim.run()
    return {"name": run.name, "policy": run.source, "overrides": dict(run.overrides), "pool": name,
            "gpus_per_node": gpn, "metrics": metrics, "intervals": sim.metrics.intervals, "series": sim.metrics.series}


def parse_sweep(text):
    """'FIELD=a,b,c' or 'FIELD=start:stop:step' (stop included) -> (path list, [values])."""
    field, sep, spec = text.partition("=")
    if not sep or not field.strip() or not spec.strip():
        raise SimulateError("--sweep %r is not FIELD=V1,V2,... or FIELD=START:STOP:STEP (e.g. "
                            "pools.gpu.floors.warm=0:16:2)." % text)
    try:
        if ":" in spec:
            start, stop, step = (int(part) for part in spec.split(":"))
            if step <= 0 or stop < start:
                raise ValueError
            count = (stop - start) // step + 1
            values = range(start, stop + 1, step) if count <= MAX_SWEEP_POINTS else ()
        else:
            values = [int(part) for part in spec.split(",")]
            count = len(set(values))
    except ValueError:
        raise SimulateError("--sweep %r: values must be whole numbers, START:STOP:STEP with STEP > 0 and STOP >= "
                            "START." % text) from None
    if count > MAX_SWEEP_POINTS:
        raise SimulateError("--sweep %r gives %d values; a sweep runs at most %d. Use a larger STEP or fewer values."
                            % (text, count, MAX_SWEEP_POINTS))
    return field.strip().split("."), sorted(set(values))


def sweep(trace, policy_path, field, values, latency_factory, nodes, overrides=(), **options):
    """One run per value of ``field`` (after ``overrides``); returns {"field", "points": [{"value", "metrics"}]}."""
    points = []
    for value in values:
        run = policies.load(policy_path, list(overrides) + [(field, value)])
        result = run_policy(trace, run, latency_factory, nodes, **options)
        points.append({"value": value, "metrics": result["metrics"]})
    return {"field": ".".join(field), "policy": policy_path, "points": points}


def tradeoff(sweep_result, targets=None):
    """For each shortfall target (GPU-minutes): the smallest swept value meeting it."""
    points = sorted(sweep_result["points"], key=lambda p: p["value"])
    if targets is None:
        base = points[0]["metrics"]["shortfall_gpu_minutes"] if points else 0.0
        targets = sorted({base * f for f in DEFAULT_TARGET_FRACTIONS}, reverse=True)
    out = []
    for target in targets:
        hit = next((p for p in points if p["metrics"]["shortfall_gpu_minutes"] <= target), None)
        out.append({"target": target, "value": hit and hit["value"],
                    "shortfall": hit and hit["metrics"]["shortfall_gpu_minutes"],
                    "idle_cost": hit and idle_cost(hit["metrics"])})
    return out
