"""Command-line glue shared by ``gpufleet why``, ``gpufleet seam`` and ``gpufleet report --fleet``:
the input options and turning them into ``FleetInputs``."""
import os

from gpufleet import lab_target
from gpufleet.capacity.policy import load_policy
from gpufleet.capacity.policy_errors import PolicyError
from gpufleet.controller.errors import ControllerError
from gpufleet.view import sources
from gpufleet.view.cli_args import add_input_arguments

__all__ = ["add_input_arguments", "inputs_from_args", "read_text", "INPUT_ERRORS", "load_hosts"]

# What a bad input raises: each names the input, what is wrong and the fix.
INPUT_ERRORS = (sources.SourceError, PolicyError, ControllerError, LookupError, ValueError)


def read_text(path, what):
    try:
        with open(path) as handle:
            return handle.read()
    except OSError as exc:
        raise sources.SourceError("Cannot read %s %s: %s." % (what, path, exc.strerror))


def load_hosts(path):
    """Inventory hosts (name -> Host) through ansible-inventory, or None without a path."""
    if not path:
        return None
    from gpufleet.controller.inventory import load_inventory
    return load_inventory(path)


def _gate_dir(args):
    if args.gate_dir:
        return args.gate_dir
    if "://" in args.ledger:
        return None
    return os.path.join(os.path.dirname(os.path.abspath(args.ledger)), "reports", "gate")


def _resolve_lab(args, slurm):
    """Fill ledger, inventory and Slurm prefix from the running lab for --lab (flags win)."""
    prefix = (getattr(args, "slurm_prefix", None) or "").split()
    if getattr(args, "lab", False):
        merged = lab_target.merged_vars([lab_target.vars_path()])
        args.ledger = args.ledger or merged.get("gpufleet_ledger")
        args.inventory = args.inventory or lab_target.inventory_path()
        prefix = prefix or (lab_target.slurm_prefix(merged) if slurm else [])
    if not args.ledger:
        raise ValueError("No ledger: pass --ledger PATH|URL, or --lab to read the running lab's.")
    return prefix


def inputs_from_args(args, now, slurm=True):
    """FleetInputs from the parsed options; the ledger is opened read-only and closed."""
    prefix = _resolve_lab(args, slurm)
    squeue = sinfo = None
    if slurm:
        squeue = (read_text(args.squeue_json, "squeue JSON") if args.squeue_json
                  else sources.run_slurm(["squeue", "--json"], prefix))
        sinfo = (read_text(args.sinfo_json, "sinfo JSON") if args.sinfo_json
                 else sources.run_slurm(["sinfo", "--json"], prefix))
    policy, hosts = load_policy(args.policy), load_hosts(args.inventory)
    ledger = sources.open_ledger(args.ledger)
    try:
        return sources.load(ledger, policy, now, squeue, sinfo, _gate_dir(args), hosts=hosts)
    finally:
        ledger.close()
