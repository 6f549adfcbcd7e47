"""``gpufleet seam``: owned GPU-hours per pool split into busy, schedulable idle and the
states that are paid for but not schedulable, and time to schedulable per node."""
import json
import sys
import time

NAME = "seam"
HELP = "measure where owned GPU-hours go: busy, schedulable idle, and paid but not schedulable by cause"


def compute(inputs, since, until):
    from gpufleet.view.seam import by_node, seam
    from gpufleet.view.startup import bringups

    result = seam(inputs, since, until)
    members = set(n for p in inputs.pools for n in p.members)
    history = by_node(inputs.transitions)
    result["time_to_schedulable"] = dict(
        (node, [b for b in bringups(history.get(node, ())) if since <= b["joined_at"] < until])
        for node in sorted(members))
    return result


def cmd_seam(args):
    from gpufleet.view.cli import INPUT_ERRORS, inputs_from_args
    from gpufleet.view.period import parse_when
    from gpufleet.view.seam_text import render_seam

    now = time.time()
    try:
        since, until = parse_when(args.since, now), parse_when(args.until, now) if args.until else now
        result = compute(inputs_from_args(args, now, slurm=False), since, until)
    except INPUT_ERRORS as exc:
        print("gpufleet seam: error: %s" % exc, file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        sys.stdout.write(render_seam(result, result["time_to_schedulable"]))
    return 0


def register(parser):
    from gpufleet.view.cli_args import add_input_arguments

    parser.add_argument("--since", default="24h",
                        help="period start: a duration ago (24h, the default; 2h30m), an epoch or ISO time")
    parser.add_argument("--until", help="period end (default: now)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    add_input_arguments(parser, slurm=False)
    parser.set_defaults(func=cmd_seam)
