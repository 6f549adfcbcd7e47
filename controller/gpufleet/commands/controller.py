"""``gpufleet controller run|once|status``: the capacity controller (docs/controller.md).

    gpufleet controller once --lab --policy policy.yml --dry-run
    gpufleet controller run --lab --policy policy.yml
    gpufleet controller status --lab --policy policy.yml [--json]
    gpufleet controller run --config /etc/gpufleet/controller.yml   # the service (docs/service.md)

The collection is imported when a command runs (``gpufleet controller --help`` works without it).
"""
import json
import os
import signal
import socket
import sys

from gpufleet.capacity.duration import duration_arg
from gpufleet import state_dir
from gpufleet.commands import whole_number

NAME = "controller"
HELP = "capacity controller: supply that follows Slurm demand (run, once, status)"


def _settings(args):
    """Ledger, inventory, variable files and the Slurm command prefix from flags (and the lab)."""
    from gpufleet import lab_target

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
    gpufleet_report_dir gets <state directory>/reports (docs/service.md)."""
    if merged.get("gpufleet_report_dir"):
        return merged["gpufleet_report_dir"]
    if "://" in str(ledger):
        return state_dir.reports_dir()
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
    out_dir = state_dir.runs_dir(kind)
    os.makedirs(out_dir, exist_ok=True)
    return watch(read, min(intervals) if intervals else None, out_dir, say=say)


def build(args, out=None, watch_bmc=True):
    from gpufleet.controller import inventory, logs, records
    from gpufleet.controller.actuator import Actuator
    from gpufleet.controller.demand import SlurmSource
    from gpufleet.controller.loop import Reconciler
    from gpufleet.controller.planning import Planning
    from gpufleet import lab_target

    ledger_at, inventory_path, var_files, prefix, spool, report_dir = _settings(args)
    merged = lab_target.merged_vars(var_files)
    secrets = logs.secrets_of(merged)      # masked before any line is said
    log = _log(args, out)
    log.secrets.update(secrets)
    if getattr(args, "log", None) is not None:
        args.log.secrets.update(secrets)   # the command's own lines (the plan) too
    planning = Planning(args.policy)
    ledger = records.open_ledger(ledger_at)
    concurrency = args.concurrency or planning.concurrency()
    actuator = Actuator(inventory_path, var_files, concurrency=concurrency)
    controller_id = args.id or "%s:%d" % (socket.gethostname(), os.getpid())
    hosts = inventory.load_inventory(inventory_path)
    reconciler = Reconciler(SlurmSource(prefix), ledger, planning, actuator, hosts,
                            controller_id, out=log, spool_dir=spool, report_dir=report_dir)
    for line in pool_warnings(planning, hosts.values()):   # stderr: `status --json` keeps stdout one document
        log.to(sys.stderr)("policy warning: %s" % line, "warning", event="policy_warning")
    if watch_bmc:   # the background reads and writes (status builds without them)
        reconciler.redfish = _watch("bmc", planning, inventory_path, var_files, reconciler._say)
        reconciler.health = _watch("health", planning, inventory_path, var_files, reconciler._say)
        reconciler.image_features = _image_features(inventory_path, var_files, reconciler._say)
    from gpufleet.controller.images import Catalogue
    reconciler.catalogue = Catalogue(merged)   # rollout/renewal recycles
    return reconciler


def _log(args, out=None):
    """The command's log (controller/logs.py): ``out``, else stdout (stderr when stdout carries
    `status --json`'s one document), in the settled format, masking the environment's secrets
    (build adds the variable files')."""
    from gpufleet.controller import logs

    log = getattr(args, "log", None)
    if log is None or out is not None:
        stream = out if out is not None else (sys.stderr if getattr(args, "json", False) else None)
        log = logs.Log(stream, getattr(args, "log_format", None) or "text", logs.secrets_of(environ=os.environ))
    return log


def pool_warnings(planning, hosts):
    """Policy load warnings against the inventory: floors above a pool's member count."""
    from gpufleet.capacity.policy import size_warnings
    members = dict.fromkeys(planning.policy.pools, 0)
    for host in hosts:
        pool = planning.pool_of(host)
        if pool is not None:
            members[pool] += 1
    return size_warnings(planning.policy, members)


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


def settle(args, command="once"):
    """Fill ``args`` from the flags, the config file and the defaults (controller/service_config.py),
    say each flag that overrides the file, and set the state directory. Idempotent."""
    from gpufleet.controller import service_config
    from gpufleet.controller.errors import ControllerError

    if getattr(args, "settled", False):
        return args
    config, source = service_config.read_for(getattr(args, "config", None), lab=args.lab)
    flags = {name: getattr(args, name, None) for name in service_config.SETTINGS}
    values, origins, notes = service_config.merge(flags, config, source)
    for name, value in values.items():
        setattr(args, name, list(value) if name == "vars" and value else value)
    if not args.policy:
        raise ControllerError("No capacity policy: pass --policy FILE or set policy: in the config file "
                              "(%s; docs/service.md)." % (source or service_config.DEFAULT_PATH))
    if command == "run" and not args.dry_run and args.lease_ttl <= args.interval:
        raise ControllerError("The lease TTL (%gs, %s) must be above the interval (%gs, %s): the lease would "
                              "expire between passes; fix: raise lease_ttl or lower interval."
                              % (args.lease_ttl, origins["lease_ttl"], args.interval, origins["interval"]))
    path, where = state_dir.resolve(args.state_dir)
    state_dir.configure(path, where)
    args.config_source, args.config_notes, args.origins, args.settled = source, notes, origins, True
    args.log = _log(args)
    for note in notes:
        args.log("config: %s" % note, event="config_override")
    return args


def cmd_once(args):
    settle(args)
    reconciler = build(args)
    reconciler.learning.background = False    # one pass: no later pass would use a model fitted behind it
    if args.dry_run:
        result = reconciler.once(dry_run=True)
        if result.error:
            return 1
        _say_plan(args, result.plan)
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
        _say_plan(args, result.plan)
    return 1 if result.error else 0


def _say_plan(args, plan):
    """The plan as its table, or (log_format json) one line per action."""
    from gpufleet.controller import logs, status

    if args.log.fmt == "text":
        args.log(status.render_plan(plan))
        return
    args.log("plan: %d action(s)" % len(plan.actions), event="plan", actions=len(plan.actions))
    for a in plan.actions:
        args.log("plan %s %s %s: %s" % (a.kind, a.pool, ",".join(a.nodes), a.reason), reason=a.reason, job=a.job_id,
                 gang=a.gang_id, replaces=a.replaces, target_tier=a.target_tier,
                 **logs.action_fields(a, event="planned"))
    for pool, notes in sorted((plan.notes or {}).items()):
        args.log("plan notes %s" % pool, event="plan_notes", pool=pool, notes=notes)


def cmd_run(args):
    settle(args, "run")
    if args.dry_run:
        return cmd_once(args)
    notifier = _notifier(args)
    reconciler = build(args)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_a: stopping.append(True))
    args.log("controller %s: reconciling every %ss (policy %s)" % (reconciler.controller_id, args.interval,
                                                                   args.policy),
             event="starting", controller=reconciler.controller_id, interval=args.interval, policy=args.policy)
    args.log("state: %s (%s)" % state_dir.current(), event="state_dir", path=state_dir.current()[0])
    reconciler.hooks, liveness = service_hooks(args, reconciler, notifier)
    server = start_metrics(args, reconciler, liveness.registry)
    try:
        reconciler.run(args.interval, args.lease_ttl, stop=lambda: bool(stopping), wait_for_lease=args.wait)
    finally:
        if server is not None:
            server.shutdown()
    return 0


def _notifier(args):
    """systemd's notify socket; a watchdog period not above the interval is refused (systemd
    would kill a healthy controller between two passes)."""
    from gpufleet.controller.errors import ControllerError
    from gpufleet.controller.notify import Notifier

    notifier = Notifier()
    if notifier.watchdog_s is not None and notifier.watchdog_s <= args.interval:
        raise ControllerError("systemd's WatchdogSec= (%gs) is not above the interval (%gs, %s): the watchdog would "
                              "kill the controller between passes; fix: raise WatchdogSec= (docs/service.md) or "
                              "lower interval." % (notifier.watchdog_s, args.interval, args.origins["interval"]))
    return notifier


def service_hooks(args, reconciler, notifier):
    """(ServiceHooks, Liveness) for ``run``: notify, liveness metrics, retention of run folders."""
    from gpufleet.controller.liveness import Liveness
    from gpufleet.controller.retention import Retention
    from gpufleet.controller.service import ServiceHooks

    liveness = Liveness()
    hooks = ServiceHooks(notifier, liveness, Retention(args.keep_runs, args.keep_for), state_dir.runs_dir(),
                         in_flight=reconciler.actuator.run_ids, say=reconciler._say, clock=reconciler.clock,
                         interval=args.interval)
    return hooks, liveness


def start_metrics(args, reconciler, registry=None):
    """Serve /metrics when --metrics-port is given: the fleet metrics from the ledger
    (docs/fleet-view.md) and what ``registry`` holds (the liveness metrics, docs/service.md)."""
    if args.metrics_port is None:
        return None
    from prometheus_client import CollectorRegistry
    from prometheus_client.exposition import start_http_server

    from gpufleet.view.metrics import LedgerCollector
    from gpufleet.view.sources import open_ledger
    ledger_at = _settings(args)[0]
    collector = LedgerCollector(lambda: open_ledger(ledger_at), reconciler.planning.policy, hosts=reconciler.hosts)
    registry = registry if registry is not None else CollectorRegistry(auto_describe=False)
    registry.register(collector)
    server, _thread = start_http_server(args.metrics_port, addr=args.metrics_addr, registry=registry)
    _log(args)("metrics: http://%s:%d/metrics" % (args.metrics_addr, server.server_port), event="metrics",
               port=server.server_port)
    return server


def cmd_status(args):
    from gpufleet.controller import records, stages, status

    settle(args, "status")
    reconciler = build(args, watch_bmc=False)
    now = reconciler.clock()
    # a learned forecast's model as a pass would have it: fitted here, in place, nothing recorded
    # or logged (the status shows it)
    from gpufleet.controller.learning import Models
    reconciler.learning = Models(clock=reconciler.clock, background=False)
    # rollouts in progress, open day-2 cases, and the operator drains the repair stage finds (nothing recorded)
    world = reconciler.observe(reconciler.read_world(now), now)
    day2 = stages.Repair().decide(world, stages.Claimed())
    reconciler.say_notes(stages.Pass(day2=day2))
    learned = reconciler.learning.notes()
    facts = (world, records.open_decisions(reconciler.ledger), records.decisions(reconciler.ledger, limit=args.last),
             records.lease_holder(reconciler.ledger, now), records.node_records(reconciler.ledger))
    if args.json:
        print(json.dumps(status.status_document(*facts, learned=learned, day2=day2), indent=2, sort_keys=True))
    else:
        print(status.render_status(*facts[:4], ledger_nodes=facts[4], learned=learned, day2=day2))
    return 0


def _common(parser, config=False):
    """The options every controller-side command takes; ``config``: also --config and --state-dir
    (run, once, status), the file filling what the flags leave unset (docs/service.md)."""
    if config:
        parser.add_argument("--config", help="controller config file (default /etc/gpufleet/controller.yml when "
                                             "it exists; never read with --lab unless named)")
        parser.add_argument("--state-dir", help="where run artifacts and reports go (default $STATE_DIRECTORY, "
                                                "the checkout's build/ outside a service; docs/service.md)")
        parser.add_argument("--log-format", choices=("text", "json"),
                            help="log lines as text (default) or one JSON object a line (docs/controller.md, Logs)")
    parser.add_argument("--policy", required=not config, help="capacity policy YAML (docs/capacity.md)")
    parser.add_argument("--lab", action="store_true", help="target the running lab (build/lab/vars.yml)")
    parser.add_argument("-i", "--inventory", help="rack inventory (default inventories/lab.rack.yml)")
    parser.add_argument("-e", "--vars", action="append", help="variable file passed to every playbook (repeatable)")
    parser.add_argument("--ledger", help="ledger path or postgresql:// URL (default: gpufleet_ledger of the vars)")
    parser.add_argument("--slurm-prefix", help="run squeue/sinfo through this command, e.g. 'ssh ctl' "
                                               "(default: here; --lab: docker exec <slurmctld container>)")
    parser.add_argument("--id", help="this controller's name in the lease and decisions (default host:pid)")
    parser.add_argument("--concurrency", type=int, help="playbook runs at once (default: the policy's fleet limit)")
    parser.add_argument("--lease-ttl", type=duration_arg, default=None if config else 60.0,
                        help="lease time to live: seconds or a duration like 2m, 1h30m (default 60)")
    parser.add_argument("--wait", action="store_true", default=None if config else False,
                        help="wait for the lease instead of exiting when held")
    parser.add_argument("--spool", default=None if config else os.environ.get("GPUFLEET_CONTROLLER_SPOOL"),
                        help="directory where `gpufleet slurm resume|suspend|resume-fail` leave requests "
                             "(default $GPUFLEET_CONTROLLER_SPOOL, else gpufleet_controller_spool of the "
                             "variable files, e.g. the lab's; unset: power saving is not read)")


def register(parser):
    sub = parser.add_subparsers(dest="controller_command", metavar="SUBCOMMAND", required=True)
    run = sub.add_parser("run", help="reconcile continuously")
    _common(run, config=True)
    run.add_argument("--interval", type=duration_arg,
                     help="time between passes: seconds or a duration like 30s, 2m (default 10)")
    run.add_argument("--dry-run", action="store_true", help="print one plan and change nothing")
    run.add_argument("--metrics-port", type=int, help="serve Prometheus metrics on this port (docs/fleet-view.md)")
    run.add_argument("--metrics-addr", help="address for --metrics-port (default 127.0.0.1)")
    run.add_argument("--keep-runs", type=whole_number(0, float("inf"), "a whole number of 0 or more"),
                     help="retention: keep the newest N finished run folders (default 500; docs/service.md)")
    run.add_argument("--keep-for", type=duration_arg,
                     help="retention: keep finished run folders younger than this, e.g. 7d (default 7d; "
                          "a folder either rule keeps stays)")
    run.set_defaults(func=cmd_run)
    once = sub.add_parser("once", help="one reconcile pass (cron, AWX); waits for the actions it starts")
    _common(once, config=True)
    once.add_argument("--dry-run", action="store_true", help="print the plan and change nothing")
    once.set_defaults(func=cmd_once)
    status = sub.add_parser("status", help="pools, tiers, demand, unservable jobs, in-flight work, last decisions")
    _common(status, config=True)
    status.add_argument("--last", type=int, default=15, help="how many recent decisions to show (default 15)")
    status.add_argument("--json", action="store_true", help="print the same facts as JSON")
    status.set_defaults(func=cmd_status)
