"""Command-line glue shared by ``gpufleet why``, ``gpufleet seam`` and ``gpufleet report --fleet``:
the input options and turning them into ``FleetInputs``."""
import os

import yaml

from gpufleet.view import sources

__all__ = ["add_input_arguments", "inputs_from_args", "read_text"]


def add_input_arguments(parser, slurm=True):
    parser.add_argument("--ledger", required=True, help="lifecycle ledger: SQLite file or postgresql:// URL")
    parser.add_argument("--policy", required=True, help="capacity policy YAML (its pools mapping)")
    parser.add_argument("--gate-dir", help="saved gate reports <node>.json (default: <ledger dir>/reports/gate)")
    if slurm:
        parser.add_argument("--squeue-json", help="saved `squeue --json` output (default: run squeue --json)")
        parser.add_argument("--sinfo-json", help="saved `sinfo --json` output (default: run sinfo --json)")


def read_text(path, what):
    try:
        with open(path) as handle:
            return handle.read()
    except OSError as exc:
        raise sources.SourceError("Cannot read %s %s: %s." % (what, path, exc.strerror))


def _policy(path):
    try:
        return yaml.safe_load(read_text(path, "policy")) or {}
    except yaml.YAMLError as exc:
        raise sources.SourceError("Policy %s is not valid YAML: %s" % (path, exc))


def _gate_dir(args):
    if args.gate_dir:
        return args.gate_dir
    if "://" in args.ledger:
        return None
    return os.path.join(os.path.dirname(os.path.abspath(args.ledger)), "reports", "gate")


def inputs_from_args(args, now, slurm=True):
    """FleetInputs from the parsed options; the ledger is opened read-only and closed."""
    squeue = sinfo = None
    if slurm:
        squeue = read_text(args.squeue_json, "squeue JSON") if args.squeue_json else sources.run_slurm(["squeue", "--json"])
        sinfo = read_text(args.sinfo_json, "sinfo JSON") if args.sinfo_json else sources.run_slurm(["sinfo", "--json"])
    policy = _policy(args.policy)
    ledger = sources.open_ledger(args.ledger)
    try:
        return sources.load(ledger, policy, now, squeue, sinfo, _gate_dir(args))
    finally:
        ledger.close()
