"""``gpufleet why JOB|NODE|POOL``: the layer that blocks, with its evidence.

Exit codes (``EXIT_CODES``, made from ``gpufleet.view.answer.EXIT_CODES``, the codes the answer
exits with): 0 nothing blocks (the job runs, the node is schedulable or busy, the pool has no
blocked pending job); 11, 12, 13: blocked at L1 capacity supply, L2 provisioning, L3
scheduling; 1 error (unknown subject, unreadable input, Slurm unreachable); 2 usage error.
"""
import json
import sys
import time

from gpufleet.view.answer import EXIT_CODES as LAYER_EXIT_CODES
from gpufleet.view.layers import LAYER_NAMES

NAME = "why"
HELP = "say which layer keeps a job, node or pool from running (capacity, provisioning, scheduling, workload)"
EXIT_CODES = ((0, "nothing blocks: the job runs, the node is schedulable or busy, the pool has no blocked job"),
              (1, "error: unknown subject, unreadable input, Slurm unreachable"),
              (2, "usage error")) + tuple(
    (code, "blocked at %s %s" % (layer, LAYER_NAMES[layer]))
    for layer, code in sorted(LAYER_EXIT_CODES.items(), key=lambda item: item[1]) if code)


def cmd_why(args):
    from gpufleet.view.answer import exit_code, render_text, to_dict
    from gpufleet.view.cli import INPUT_ERRORS, inputs_from_args
    from gpufleet.view.why import why

    try:
        inputs = inputs_from_args(args, now=time.time())
        answer = why(inputs, args.subject, args.kind)
    except INPUT_ERRORS as exc:
        print("gpufleet why: error: %s" % exc, file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(to_dict(answer), indent=2, sort_keys=True))
    else:
        sys.stdout.write(render_text(answer))
    return exit_code(answer)


def register(parser):
    from gpufleet.view.cli_args import add_input_arguments

    parser.add_argument("subject", help="a Slurm job id, a node name or a pool name")
    parser.add_argument("--kind", choices=("job", "node", "pool"),
                        help="what SUBJECT is (default: a job id first, then a pool, then a node)")
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")
    add_input_arguments(parser)
    parser.set_defaults(func=cmd_why)
