"""``gpufleet refresh start|status|halt|resume|rollback``: image / gate-profile rollouts of a pool.

    gpufleet refresh start --lab --policy lab/config/capacity.yml --pool lab --image-version 2026.07.1
    gpufleet refresh status --lab --policy lab/config/capacity.yml
    gpufleet refresh halt --lab --policy lab/config/capacity.yml --pool lab
    gpufleet refresh rollback --lab --policy lab/config/capacity.yml --pool lab

The command only records the rollout (and its phase) in the ledger; the capacity controller
moves it, node by node, within the pool's day-2 budget (docs/day2.md, "Refresh").
"""
import getpass
import os
from collections import Counter
from functools import partial

from gpufleet.collection import repo_path
from gpufleet.commands import controller as controller_command

NAME = "refresh"
HELP = "roll a new image version or gate profile across a pool: start, status, halt, resume, rollback"


def _ledger(args):
    from gpufleet import lab_target
    from gpufleet.controller import records
    ledger_at, inventory_path, var_files = controller_command._settings(args)[:3]
    return records.open_ledger(ledger_at), inventory_path, lab_target.merged_vars(var_files)


def _pool_versions(planning, inventory_path, ledger, pool):
    """Image versions of the pool's nodes in service (ledger joined or hot)."""
    from gpufleet.controller import inventory, records
    # imported here: `gpufleet --help` and `--version` load every command module without the collection
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
    hosts = inventory.load_inventory(inventory_path)
    mine = {name for name, host in hosts.items() if planning.pool_of(host) == pool}
    return Counter(r.get("image_version") or "(none)" for r in records.node_records(ledger)
                   if r["node"] in mine and r["state"] in (states.JOINED, states.HOT))


def from_version(counts, pool, default):
    """The version the pool runs now; several at once is refused (finish that first)."""
    from gpufleet.controller.errors import ControllerError
    if len(counts) > 1:
        raise ControllerError("Pool %s runs several image versions now (%s); a rollout starts from one. Finish or "
                              "roll back the move in progress first (`gpufleet refresh status`)."
                              % (pool, ", ".join("%s on %d" % kv for kv in sorted(counts.items()))), pool=pool)
    if counts:
        return next(iter(counts))
    if not default:
        raise ControllerError("Pool %s has no node in service and the variable files set no gpufleet_image_version: "
                              "nothing says which version it leaves. Set gpufleet_image_version." % pool, pool=pool)
    return default


def _check_profile(variables, profile):
    from gpufleet.controller.errors import ControllerError
    folder = variables.get("gpufleet_gate_profile_dir") or repo_path("profiles", "gate")
    if not os.path.isfile(os.path.join(folder, profile + ".yml")):
        raise ControllerError("Gate profile %r is not in %s (no %s.yml). Pick one of: %s; or set "
                              "gpufleet_gate_profile_dir." % (
                                  profile, folder, profile, ", ".join(sorted(
                                      f[:-4] for f in os.listdir(folder) if f.endswith(".yml")))
                                  if os.path.isdir(folder) else "(the folder is missing)"), field="gate_profile")


def cmd_start(args):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.verify import verify_image
    from gpufleet.controller import records
    from gpufleet.controller.errors import ControllerError
    from gpufleet.controller.images import Catalogue
    from gpufleet.controller.planning import Planning

    planning = Planning(args.policy)
    if args.pool not in planning.policy.pools:
        raise ControllerError("Pool %r is not in the policy %s; pools: %s." % (
            args.pool, args.policy, ", ".join(planning.policy.pools)), field="pool")
    ledger, inventory_path, variables = _ledger(args)
    start = from_version(_pool_versions(planning, inventory_path, ledger, args.pool), args.pool,
                         variables.get("gpufleet_image_version"))
    if start == args.image_version and not args.gate_profile:
        raise ControllerError("Pool %s already runs %s; give another --image-version, or --gate-profile to "
                              "re-validate it under a new profile." % (args.pool, start), pool=args.pool)
    catalogue = Catalogue(variables)
    summary = catalogue.verify(args.image_version, verify_image)
    catalogue.verify(start, verify_image)      # a rollback redeploys it: it must be there too
    if args.gate_profile:
        _check_profile(variables, args.gate_profile)
    who = args.who or getpass.getuser()
    rid = records.start_rollout(ledger, args.pool, start, args.image_version, who,
                                args.reason or "started by %s" % who, gate_profile=args.gate_profile,
                                from_gate_profile=variables.get("gpufleet_gate_profile"))
    print("rollout %s: pool %s %s -> %s%s (build %s, signed by %s), phase canary." % (
        rid, args.pool, start, args.image_version,
        " with gate profile %s" % args.gate_profile if args.gate_profile else "", summary["build_id"],
        summary["key_id"]))
    print("The capacity controller moves it within the pool's day2.budget; watch it with `gpufleet refresh status`.")
    print("Until it is done, keep multi-node jobs on one version: list image_%s and image_%s in the Slurm "
          "controller's /etc/slurm/gpufleet-image-features (contrib/slurm/job_submit.lua, docs/day2.md)."
          % (start, args.image_version))
    return 0


def cmd_status(args):
    from gpufleet.controller import records, status
    from gpufleet.day2 import rollout_book

    ledger, _inventory, _vars = _ledger(args)
    rows = records.rollouts(ledger, pool=args.pool)[-args.last:]
    if not rows:
        print("no rollouts%s" % (" for pool %s" % args.pool if args.pool else ""))
        return 0
    book = rollout_book.fold(records.decisions(ledger, since=min(r["created_at"] for r in rows)))
    print("\n".join(line[2:] for line in status.rollout_lines(rows, book)))
    return 0


def _move(args, phase, allowed, verb):
    from gpufleet.controller import records
    from gpufleet.controller.errors import ControllerError

    ledger, _inventory, _vars = _ledger(args)
    active = [r for r in records.rollouts(ledger, pool=args.pool) if r["phase"] in records.ROLLOUT_ACTIVE]
    if not active:
        raise ControllerError("Pool %s has no rollout in progress to %s (`gpufleet refresh status --pool %s`)."
                              % (args.pool, verb, args.pool), pool=args.pool)
    row = active[-1]
    if row["phase"] not in allowed:
        raise ControllerError("Rollout %s of pool %s is %s; %s applies to a rollout that is %s."
                              % (row["id"], args.pool, row["phase"], verb, " or ".join(allowed)), pool=args.pool)
    who = args.who or getpass.getuser()
    target = phase(row) if callable(phase) else phase
    why = "%s by %s%s" % (verb, who, ": " + args.reason if args.reason else "")
    if not records.set_rollout_phase(ledger, row["id"], target, why, expect=allowed):
        raise ControllerError("Rollout %s changed phase meanwhile; run the command again." % row["id"])
    print("rollout %s: %s -> %s (%s)" % (row["id"], row["phase"], target, why))
    return 0


def _add(sub, name, func, help_text, pool_required=True):
    parser = sub.add_parser(name, help=help_text, description=help_text)
    controller_command._common(parser)
    parser.add_argument("--pool", required=pool_required, help="the pool (a name in the policy)")
    parser.add_argument("--reason", help="why, recorded with the rollout")
    parser.add_argument("--who", help="who asks, recorded with the rollout (default: the login name)")
    parser.set_defaults(func=func)
    return parser


def register(parser):
    sub = parser.add_subparsers(dest="refresh_command", metavar="SUBCOMMAND", required=True)
    start = _add(sub, "start", cmd_start, "start a rollout: canaries first, then batches within the budget")
    start.add_argument("--image-version", required=True, help="the published, signed version to move to")
    start.add_argument("--gate-profile", help="re-validate under this gate profile (profiles/gate/<name>.yml)")
    status = _add(sub, "status", cmd_status, "rollouts, their phase, canaries and gate results", False)
    status.add_argument("--last", type=int, default=5, help="how many rollouts to show (default 5)")
    _add(sub, "halt", partial(_move, phase="halted", allowed=("canary", "batches"), verb="halt"),
         "stop starting nodes; the ones in flight finish, moved nodes stay")
    _add(sub, "resume", partial(_move, phase=lambda row: "batches" if row["canaries"] else "canary",
                                allowed=("halted",), verb="resume"), "continue a halted rollout")
    _add(sub, "rollback", partial(_move, phase="rolling_back", allowed=("canary", "batches", "halted"),
                                  verb="rollback"), "redeploy the previous version on every node the rollout moved")
