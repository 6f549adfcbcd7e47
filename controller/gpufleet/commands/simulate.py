"""``gpufleet simulate``: replay a demand trace through the capacity planner, compare policies.

docs/capacity.md ("Simulator") describes the model, the metrics and the defaults.
"""
import importlib.util
import json
import os
import sys

NAME = "simulate"
HELP = "replay a demand trace through the capacity controller's planner and measure policies"

HELIOS_CITATION = ("Demand: Helios trace (Hu, Sun, Wen, Wang, Zhang, \"Characterization and Prediction of Deep "
                   "Learning Workloads in Large-Scale GPU Datacenters\", SC'21; HeliosData, CC BY 4.0).")


def _when(text, flag):
    from gpufleet.simulate.trace import parse_time
    return None if text is None else parse_time(text, flag, fix="Give epoch seconds or ISO 8601 "
                                                                "(e.g. 2020-05-01 00:00:00).")


DEFAULT_POLICY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "simulate",
                              "default_policy.yml")


def _check_flags(args):
    """Refuse bad flags and unwritable outputs before the trace is read and the runs start."""
    from gpufleet.simulate.errors import SimulateError
    from gpufleet.simulate.fleet import check_nodes
    from gpufleet.simulate.output import check_writable
    from gpufleet.simulate.trace import check_scale

    if args.json not in (None, "-"):
        # --json out.json: the file, the tables still on stdout (one flag, one meaning per form)
        if args.json_file and os.path.abspath(args.json_file) != os.path.abspath(args.json):
            raise SimulateError("--json %s and --json-file %s name two files. Give one of them."
                                % (args.json, args.json_file))
        args.json_file, args.json = args.json, None
    if args.nodes is not None:
        check_nodes(args.nodes)
    check_scale(args.scale)
    if args.gpus_per_node is not None and args.gpus_per_node < 1:
        raise SimulateError("--gpus-per-node %d: give the GPUs of one node (1 or more), or drop the option to use the "
                            "policy's." % args.gpus_per_node)
    _interval(args.interval)
    if args.spares is not None and args.spares < 0:
        raise SimulateError("--spares %d: give the hot spares for --failures (0 or more), or drop the option to use "
                            "the pool's floors.hot." % args.spares)
    if args.failures:
        from gpufleet.simulate.failures import FailureModel
        FailureModel(args.mtbf_gpu_hours, args.repair, args.failure_seed)
    if args.evaluate and (args.failures or args.sweep or args.compare or args.plot):
        raise SimulateError("--evaluate scores the forecasters without replaying; drop --failures, --sweep, "
                            "--compare and --plot, or run them without --evaluate.")
    outputs = [(flag, path) for flag, path in (("--json-file", args.json_file), ("--plot", args.plot)) if path]
    if len(outputs) == 2 and os.path.abspath(args.json_file) == os.path.abspath(args.plot):
        raise SimulateError("--json-file and --plot both name %s. Give each its own file." % args.json_file)
    for flag, path in outputs:
        check_writable(path, flag)
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        raise SimulateError("--plot needs matplotlib, which is not installed. Install it (pip install matplotlib) or "
                            "drop --plot.")


def _interval(text):
    """--interval in seconds (None: the policy's): seconds or a duration (2m, 1m30s), >= 0."""
    import math
    from gpufleet.capacity.duration import parse_duration
    from gpufleet.simulate.errors import SimulateError

    if text is None:
        return None
    try:
        seconds = parse_duration(text, bare_seconds=True) if isinstance(text, str) else float(text)
    except (TypeError, ValueError):
        seconds = None
    if seconds is None or not (math.isfinite(seconds) and seconds >= 0):
        raise SimulateError("--interval %s: give the controller tick in seconds >= 0 or as a duration like 30s, 2m "
                            "or 1m30s (0: no extra tick), or drop the option to use the policy's fleet.interval."
                            % text)
    return seconds


def _overrides(texts):
    from gpufleet.simulate.policies import parse_override
    return [parse_override(text) for text in texts or ()]


def _nodes(args, trace, runs):
    """--nodes, or the pool the trace says it had: its most GPUs / the pool's GPUs per node
    (rounded up)."""
    import math
    from gpufleet.simulate.errors import SimulateError
    from gpufleet.simulate.policies import pool_of

    if args.nodes is not None:
        return args.nodes
    if not trace.capacity_gpus:
        raise SimulateError("--nodes: the trace %s does not say how many GPUs the pool had (%s format). Give "
                            "--nodes N." % (trace.source, trace.fmt))
    gpn = args.gpus_per_node or pool_of(runs[0].policy, args.pool)[1].gpus_per_node
    return math.ceil(trace.capacity_gpus / gpn)


def _runs(args):
    from gpufleet.simulate import policies
    paths = [args.policy or DEFAULT_POLICY] + list(args.compare or [])
    names = [p.rsplit("/", 1)[-1].rsplit(".", 1)[0] for p in paths]
    if len(set(names)) != len(names):
        names = paths
    return [policies.load(path, _overrides(args.set), name=name) for path, name in zip(paths, names)]


def _warnings(runs, nodes, pool):
    """Policy load warnings for the simulated pool (a floor above its nodes), per run."""
    from gpufleet.capacity.policy import size_warnings
    from gpufleet.simulate.policies import pool_of

    found = []
    for run in runs:
        name, _ = pool_of(run.policy, pool)
        found += ["%s: %s" % (run.name, line) for line in size_warnings(run.policy, {name: nodes})]
    return found


def simulate(args):
    """Run everything the arguments ask for; returns the JSON document."""
    from gpufleet.simulate import compare, latency, trace as traces

    args.nodes_given = args.nodes is not None
    _check_flags(args)
    targets = _targets(args.targets) if args.targets else None
    sweep_spec = compare.parse_sweep(args.sweep) if args.sweep else None
    start, end = _when(args.start, "--from"), _when(args.end, "--to")
    raw = traces.read_trace(args.trace, args.format, args.gpus_per_node or 8, args.pool)
    trace = traces.select(raw, start, end, args.scale)
    # Demand before --from is the history the controller would have recorded: the forecast's lookback.
    prior = [(t, round((g + s) * args.scale)) for t, g, s in zip(raw.times, raw.gang_gpus, raw.small_gpus)
             if t < trace.times[0]]
    latency.load_latency(args.latency)              # fail early on a bad latency file
    factory = lambda: latency.load_latency(args.latency)  # noqa: E731  (same seed per run)
    options = dict(gpus_per_node=args.gpus_per_node, pool=args.pool, initial_tier=args.initial_tier,
                   interval=_interval(args.interval), prior=prior)
    runs = _runs(args)
    if args.evaluate:
        return _evaluate(args, raw, trace, runs[0]), [], None
    args.nodes = nodes = _nodes(args, raw, runs)
    warnings = _warnings(runs, nodes, args.pool)
    for line in warnings:
        print("warning: %s" % line, file=sys.stderr)
    results = [compare.run_policy(trace, run, factory, nodes, **options) for run in runs]
    document = {
        "trace": {"source": trace.source, "format": trace.fmt, "samples": len(trace), "step_s": trace.step,
                  "from": trace.times[0], "to": trace.times[-1] + trace.step, "scale": args.scale,
                  "prior_samples": len(prior)},
        "nodes": nodes, "nodes_from": "--nodes" if args.nodes_given else "trace", "latency": factory().describe(),
        "policy_warnings": warnings,
        # each run's "intervals": the 10-minute series inline (docs/capacity.md, "Metrics")
        "runs": [{k: v for k, v in r.items() if k != "series"} for r in results],
    }
    if args.failures:
        document["failures"] = _failures(args, trace, runs[0], factory())
    if trace.fmt == "helios":
        document["citation"] = HELIOS_CITATION
    sweep = None
    if sweep_spec:
        field, values = sweep_spec
        sweep = compare.sweep(trace, args.policy or DEFAULT_POLICY, field, values, factory, nodes,
                              overrides=_overrides(args.set),
                              **options)
        document["sweep"] = sweep
        document["tradeoff"] = compare.tradeoff(sweep, targets)
    return document, results, sweep


def _evaluate(args, raw, trace, run):
    """--evaluate: out-of-sample scores of each forecaster, split at --from (default: the start
    of the trace's last third)."""
    from gpufleet.simulate import forecasting
    from gpufleet.simulate.policies import pool_of

    name, pool_cfg = pool_of(run.policy, args.pool)
    split = trace.times[0] if args.start is not None else forecasting.default_split(raw.times)
    points = [(t, round((g + s) * args.scale)) for t, g, s in zip(raw.times, raw.gang_gpus, raw.small_gpus)]
    result = forecasting.evaluate(name, pool_cfg, points, split)
    document = {"trace": {"source": raw.source, "format": raw.fmt, "samples": len(raw), "scale": args.scale},
                "policy": run.source, "pool": name, "evaluate": result}
    if raw.fmt == "helios":
        document["citation"] = HELIOS_CITATION
    return document


def _failures(args, trace, run, latency):
    """--failures: goodput and replacement times with the spare pool (default: the pool's hot
    floor), and the smallest spare pool keeping every replacement at or under 90 s."""
    from gpufleet.simulate import failures
    from gpufleet.simulate.policies import pool_of

    _, pool_cfg = pool_of(run.policy, args.pool)
    model = failures.FailureModel(args.mtbf_gpu_hours, args.repair, args.failure_seed)
    spares = pool_cfg.floors.hot if args.spares is None else args.spares
    result = failures.simulate_failures(trace, pool_cfg.gpus_per_node, latency, model, spares)
    smallest, tried = failures.spare_sweep(trace, pool_cfg.gpus_per_node, latency, model)
    result.update(model.describe(), spares_from="--spares" if args.spares is not None else "floors.hot",
                  target_s=failures.TARGET_S, smallest_spares=smallest,
                  sweep=[{"spares": n, "max_replacement_s": s} for n, s in tried])
    return result


def _failure_lines(result):
    times = result["replacement_s"]
    spread = "none" if times is None else "p50 %.1f s, p90 %.1f s, max %.1f s" % (times["p50"], times["p90"],
                                                                                 times["max"])
    smallest = result["smallest_spares"]
    return ["failures: %d (per-GPU MTBF %g h, repair %g s, seed %d), %d hot spare(s)"
            % (result["failures"], result["mtbf_gpu_hours"], result["repair_s"], result["seed"], result["spares"]),
            "goodput: %.6f (%.2f of %.1f GPU-h stalled)" % (result["goodput"] or 0.0, result["gpu_hours_stalled"],
                                                             result["gpu_hours_asked"]),
            "replacement: %s" % spread,
            "smallest spare pool with every replacement <= %g s: %s"
            % (result["target_s"], "more than %d" % result["sweep"][-1]["spares"] if smallest is None else smallest)]


def cmd_simulate(args):
    from gpufleet.simulate import report

    document, results, sweep = simulate(args)
    # --json: stdout carries the document alone; the other lines go to stderr
    say = (lambda text: print(text, file=sys.stderr)) if args.json else print
    if args.json:
        print(json.dumps(document, indent=2, sort_keys=True))
    elif args.evaluate:
        from gpufleet.simulate.forecasting import table
        print(table(document["evaluate"]))
    else:
        print(report.table(document["runs"]))
        print()
        print(report.node_table(document["runs"]))
        if "failures" in document:
            print()
            print("\n".join(_failure_lines(document["failures"])))
        if sweep:
            print()
            print(report.tradeoff_table(sweep["field"], document["tradeoff"]))
        if "citation" in document:
            print("\n" + document["citation"])
    if args.json_file:
        report.write_json(args.json_file, document)
        say("json: %s" % args.json_file)
    if args.plot:
        from gpufleet.simulate.plot import plot
        title = "%s, %d nodes" % (document["trace"]["source"].rsplit("/", 1)[-1], document["nodes"])
        plot(args.plot, results, results[0]["gpus_per_node"], sweep, title=title, footnote=document.get("citation", ""))
        say("plot: %s" % args.plot)
    return 0


def _targets(text):
    """'1000,100,0' -> [1000.0, 100.0, 0.0]; each a finite number of GPU-minutes >= 0."""
    import math
    from gpufleet.simulate.errors import SimulateError
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        values = None
    if values is None or not all(math.isfinite(v) and v >= 0 for v in values):
        raise SimulateError("--targets %r: give shortfall targets in GPU-minutes >= 0, comma-separated (e.g. "
                            "1000,100,0)." % text)
    return values


def register(parser):
    parser.add_argument("--trace", required=True, help="demand trace: Helios CSV, time,active,total, time,gpus, or a ledger")
    parser.add_argument("--policy", help="capacity policy YAML (the controller's own format; default: the shipped "
                                         "gpufleet/simulate/default_policy.yml)")
    parser.add_argument("--latency", help="latency YAML, or a preset: baremetal (default) or lab")
    parser.add_argument("--nodes", type=int, help="nodes in the simulated pool (1 to 100000; default: the trace's "
                                                  "most GPUs / GPUs per node, rounded up)")
    parser.add_argument("--gpus-per-node", type=int, help="GPUs per node (default: the policy pool's gpus_per_node)")
    parser.add_argument("--from", dest="start", help="first time to replay (ISO 8601 or epoch seconds)")
    parser.add_argument("--to", dest="end", help="replay up to this time, excluded")
    parser.add_argument("--format", choices=("helios", "nodes", "gpus", "ledger"), help="trace format (default: detected)")
    parser.add_argument("--pool", help="pool to simulate (policy) and to read (ledger trace); needed when there are several")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply the trace's demand (above 0, e.g. to fill a larger pool)")
    parser.add_argument("--initial-tier", default="warm", choices=("hot", "warm", "cold"),
                        help="tier of the nodes not running the first sample's demand (default warm)")
    parser.add_argument("--interval",
                        help="controller tick after an operation finishes: seconds or a duration like 30s, 2m "
                             "(default: policy fleet.interval)")
    parser.add_argument("--compare", nargs="+", metavar="POLICY", help="more policies to run on the same trace")
    parser.add_argument("--set", action="append", metavar="FIELD=VALUE", help="override a policy field in every run")
    parser.add_argument("--sweep", metavar="FIELD=SPEC", help="vary one field of --policy: FIELD=0:16:2 or FIELD=0,4,8")
    parser.add_argument("--targets", help="shortfall targets for the sweep, GPU-minutes, comma-separated")
    parser.add_argument("--json", nargs="?", const="-", metavar="PATH",
                        help="print the results as JSON on stdout instead of the tables; with a PATH "
                             "(--json out.json) write them there, as --json-file does")
    parser.add_argument("--json-file", metavar="PATH", help="write the results as JSON here")
    parser.add_argument("--plot", help="write a PNG plot here")
    parser.add_argument("--evaluate", action="store_true",
                        help="score the forecasters (seasonal, learned, last value) out of sample instead of "
                             "replaying: trained before --from (default: the trace's last third), tested after")
    parser.add_argument("--failures", action="store_true",
                        help="draw node failures over the replayed window: goodput, replacement times, spare sweep")
    parser.add_argument("--spares", type=int, help="hot spares for --failures (default: the pool's floors.hot)")
    parser.add_argument("--mtbf-gpu-hours", type=float, default=48000.0,
                        help="per-GPU mean time between failures for --failures (default 48000)")
    parser.add_argument("--repair", type=float, default=114.0,
                        help="seconds to repair a failed node for --failures (default 114: the lab's day-2 "
                             "drain, recycle, readmit)")
    parser.add_argument("--failure-seed", type=int, default=1, help="seed of the failure draws (default 1)")
    parser.set_defaults(func=cmd_simulate)
