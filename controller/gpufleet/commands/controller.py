"""``gpufleet controller run|once|status``: the capacity controller (docs/controller.md).

    gpufleet controller once --lab --policy policy.yml --dry-run
    gpufleet controller run --lab --policy policy.yml
    gpufleet controller status --lab --policy policy.yml
"""
import os
import signal
import socket
import sys

from gpufleet import lab_target
from gpufleet.collection import repo_path

NAME = "controller"
HELP = "capacity controller: supply that follows Slurm demand (run, once, status)"


def _settings(args):
    """Ledger, inventory, variable files and the Slurm command prefix from flags (and the lab)."""
    var_files = list(args.vars or [])
    if args.lab:
        var_files.insert(0, lab_target.vars_path())
    merged = lab_target.merged_vars(var_files)
    ledger = args.ledger or merged.get("gpufleet_ledger")
    prefix = args.slurm_prefix.split() if args.slurm_prefix is not None else (
        lab_target.slurm_prefix(merged) if args.lab else [])
    if not ledger:
        from gpufleet.controller.errors import ControllerError
        raise ControllerError("No ledger: pass --ledger PATH|URL or --lab (build/lab/vars.yml names it).")
    inventory = os.path.abspath(args.inventory or lab_target.inventory_path())
    # Slurm's power-saving requests: --spool, else the variable files' (the lab names its own)
    spool = args.spool or merged.get("gpufleet_controller_spool")
    return ledger, inventory, var_files, prefix, spool, _report_dir(merged, ledger)


def _report_dir(merged, ledger):
    """Where gate reports are and break_fix records go: the playbooks' own rule
    (gpufleet_report_dir, else reports/ beside an SQLite ledger); a PostgreSQL ledger without
    gpufleet_report_dir gets build/reports."""
    if merged.get("gpufleet_report_dir"):
        return merged["gpufleet_report_dir"]
    if "://" in str(ledger):
        return repo_path("build", "reports")
    return os.path.join(os.path.dirname(os.path.abspath(ledger)), "reports")


def _watch(kind, planning, inventory_path, var_files, say):
    """A day-2 background read at the pools' shortest interval: ``bmc`` (playbooks/bmc_health.yml,
    day2.redfish_interval) or ``health`` (playbooks/health_check.yml, day2.health_interval)."""
    from gpufleet.controller.bmc import BmcWatch
    from gpufleet.controller.health import HealthWatch

    watch, playbook, key, out_var, timeout = {
        "bmc": (BmcWatch, "bmc_health", "redfish_interval", "gpufleet_bmc_read_out", 300),
        "health": (HealthWatch, "health_check", "health_interval", "gpufleet_health_out", 900)}[kind]
    intervals = [getattr(p.day2, key) for p in planning.policy.pools.values() if getattr(p.day2, key)]

    run = _runner(playbook, inventory_path, var_files, timeout)

    def read(targets, out_path, run_id):
        return run(run_id, {"gpufleet_targets": ",".join(targets), out_var: out_path})
    out_dir = repo_path("build", "runs", kind)
    os.makedirs(out_dir, exist_ok=True)
    return watch(read, min(intervals) if intervals else None, out_dir, say=say)


def build(args, out=None, watch_bmc=True):
    from gpufleet.controller import inventory, records
    from gpufleet.controller.actuator import Actuator
    from gpufleet.controller.demand import SlurmSource
    from gpufleet.controller.loop import Reconciler
    from gpufleet.controller.planning import Planning

    ledger_at, inventory_path, var_files, prefix, spool, report_dir = _settings(args)
    planning = Planning(args.policy)
    ledger = records.open_ledger(ledger_at)
    concurrency = args.concurrency or planning.concurrency()
    actuator = Actuator(inventory_path, var_files, concurrency=concurrency)
    controller_id = args.id or "%s:%d" % (socket.gethostname(), os.getpid())
    reconciler = Reconciler(SlurmSource(prefix), ledger, planning, actuator, inventory.load_inventory(inventory_path),
                            controller_id, out=out or sys.stdout, spool_dir=spool, report_dir=report_dir)
    if watch_bmc:   # the background reads and writes (status builds without them)
        reconciler.redfish = _watch("bmc", planning, inventory_path, var_files, reconciler._say)
        reconciler.health = _watch("health", planning, inventory_path, var_files, reconciler._say)
        reconciler.image_features = _image_features(inventory_path, var_files, reconciler._say)
    from gpufleet.controller.images import Catalogue
    reconciler.catalogue = Catalogue(lab_target.merged_vars(var_files))   # rollout/renewal recycles
    return reconciler


def _runner(playbook, inventory_path, var_files, timeout):
    """run(run_id, extravars) -> the exit code of ``playbook`` (a background read or write)."""
    from gpufleet import playbook_runner

    def run(run_id, extravars):
        _status, rc, _artifacts = playbook_runner.run_playbook(
            playbook, inventory_path, run_id, var_files=var_files, timeout=timeout, extravars=extravars)
        return rc
    return run


def _image_features(inventory_path, var_files, say):
    """Keeps job_submit.lua's list of image versions (playbooks/image_features.yml) as Slurm reports them."""
    from gpufleet.controller.image_features import FeaturesWriter

    run = _runner("image_features", inventory_path, var_files, 300)
    return FeaturesWriter(lambda features, run_id: run(run_id, {"gpufleet_image_features": features}), say=say)


def cmd_once(args):
    from gpufleet.controller import status

    reconciler = build(args)
    if args.dry_run:
        result = reconciler.once(dry_run=True)
        if result.error:
            return 1
        print(status.render_plan(result.plan))
        return 0
    reconciler.take_lease(args.lease_ttl, wait=args.wait)
    try:
        reconciler.converge()
        result = reconciler.once()
        reconciler.drain()
    finally:
        from gpufleet.controller import records
        records.release_lease(reconciler.ledger, reconciler.controller_id)
    if result.plan is not None:
        print(status.render_plan(result.plan))
    return 1 if result.error else 0


def cmd_run(args):
    reconciler = build(args)
    if args.dry_run:
        return cmd_once(args)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_a: stopping.append(True))
    print("controller %s: reconciling every %ss (policy %s)" % (reconciler.controller_id, args.interval, args.policy))
    server = start_metrics(args, reconciler)
    try:
        reconciler.run(args.interval, args.lease_ttl, stop=lambda: bool(stopping), wait_for_lease=args.wait)
    finally:
        if server is not None:
            server.shutdown()
    return 0


def start_metrics(args, reconciler):
    """Serve /metrics from the ledger when --metrics-port is given (docs/fleet-view.md)."""
    if args.metrics_port is None:
        return None
    from gpufleet.view.metrics import LedgerCollector, serve
    from gpufleet.view.sources import open_ledger
    ledger_at = _settings(args)[0]
    collector = LedgerCollector(lambda: open_ledger(ledger_at), reconciler.planning.policy, hosts=reconciler.hosts)
    server = serve(args.metrics_port, args.metrics_addr, collector)
    print("metrics: http://%s:%d/metrics" % (args.metrics_addr, server.server_port), flush=True)
    return server


def cmd_status(args):
    from gpufleet.controller import records, status

    reconciler = build(args, watch_bmc=False)
    now = reconciler.clock()
    world = reconciler.read_world(now)
    reconciler.day2(world, now)      # operator drains and open day-2 cases (nothing recorded)
    from gpufleet.controller import rollouts
    rollouts.read_book(reconciler, world, now, None)    # rollouts in progress and their nodes
    print(status.render_status(world, records.open_decisions(reconciler.ledger),
                               records.decisions(reconciler.ledger, limit=args.last),
                               records.lease_holder(reconciler.ledger, now),
                               ledger_nodes=records.node_records(reconciler.ledger)))
    return 0


def _common(parser):
    parser.add_argument("--policy", required=True, help="capacity policy YAML (docs/capacity.md)")
    parser.add_argument("--lab", action="store_true", help="target the running lab (build/lab/vars.yml)")
    parser.add_argument("-i", "--inventory", help="rack inventory (default inventories/lab.rack.yml)")
    parser.add_argument("-e", "--vars", action="append", help="variable file passed to every playbook (repeatable)")
    parser.add_argument("--ledger", help="ledger path or postgresql:// URL (default: gpufleet_ledger of the vars)")
    parser.add_argument("--slurm-prefix", help="run squeue/sinfo through this command, e.g. 'ssh ctl' "
                                               "(default: here; --lab: docker exec <slurmctld container>)")
    parser.add_argument("--id", help="this controller's name in the lease and decisions (default host:pid)")
    parser.add_argument("--concurrency", type=int, help="playbook runs at once (default: the policy's fleet limit)")
    parser.add_argument("--lease-ttl", type=float, default=60.0, help="lease time to live in seconds (default 60)")
    parser.add_argument("--wait", action="store_true", help="wait for the lease instead of exiting when held")
    parser.add_argument("--spool", default=os.environ.get("GPUFLEET_CONTROLLER_SPOOL"),
                        help="directory where `gpufleet slurm resume|suspend|resume-fail` leave requests "
                             "(default $GPUFLEET_CONTROLLER_SPOOL, else gpufleet_controller_spool of the "
                             "variable files, e.g. the lab's; unset: power saving is not read)")


def register(parser):
    sub = parser.add_subparsers(dest="controller_command", metavar="SUBCOMMAND", required=True)
    run = sub.add_parser("run", help="reconcile continuously")
    _common(run)
    run.add_argument("--interval", type=float, default=10.0, help="seconds between passes (default 10)")
    run.add_argument("--dry-run", action="store_true", help="print one plan and change nothing")
    run.add_argument("--metrics-port", type=int, help="serve Prometheus metrics on this port (docs/fleet-view.md)")
    run.add_argument("--metrics-addr", default="127.0.0.1", help="address for --metrics-port (default 127.0.0.1)")
    run.set_defaults(func=cmd_run)
    once = sub.add_parser("once", help="one reconcile pass (cron, AWX); waits for the actions it starts")
    _common(once)
    once.add_argument("--dry-run", action="store_true", help="print the plan and change nothing")
    once.set_defaults(func=cmd_once)
    status = sub.add_parser("status", help="pools, tiers, demand, unservable jobs, in-flight work, last decisions")
    _common(status)
    status.add_argument("--last", type=int, default=15, help="how many recent decisions to show (default 15)")
    status.set_defaults(func=cmd_status)
