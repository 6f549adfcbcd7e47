"""``gpufleet report``: write the HTML + Markdown bring-up report from the ledger."""
import os
import sys
import time

NAME = "report"
HELP = "write the bring-up report (HTML + Markdown) from the lifecycle ledger and gate reports"


def build(ledger_path, out_dir, gate_dir=None, run_id=None, gang_id=None, nodes=None):
    """Collect and write the report; returns {"html": path, "markdown": path}."""
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import ledger_location
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
    from gpufleet.report import collect, write_report

    if not ledger_location.is_postgres(ledger_path) and not os.path.isfile(ledger_path):
        raise LedgerError("No lifecycle ledger at %s. Run a lifecycle playbook first or pass --ledger." % ledger_path)
    ledger = Ledger(ledger_path, dry_run=True, password=os.environ.get("GPUFLEET_LEDGER_PASSWORD") or None)
    try:
        data = collect(ledger, gate_dir=gate_dir, run_id=run_id, gang_id=gang_id, nodes=nodes,
                       generated_at=time.time())
    finally:
        ledger.close()
    return write_report(data, out_dir)


def build_fleet(args, out_dir, now):
    """Write fleet.html (the seam, job starts, why of every pending job); returns its path."""
    from gpufleet.report import collect_fleet, render_fleet_html
    from gpufleet.view.cli import inputs_from_args
    from gpufleet.view.period import parse_when

    data = collect_fleet(inputs_from_args(args, now), parse_when(args.since, now), now)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "fleet.html")
    with open(path, "w") as handle:
        handle.write(render_fleet_html(data))
    return path


def cmd_report(args):
    gate_dir = args.gate_dir
    if not gate_dir and "://" not in args.ledger:  # beside an SQLite file; a URL has no folder
        gate_dir = os.path.join(os.path.dirname(os.path.abspath(args.ledger)), "reports", "gate")
    paths = build(args.ledger, args.out, gate_dir, args.run_id, args.gang_id)
    print("report: %s\nmarkdown: %s" % (paths["html"], paths["markdown"]))
    if not args.fleet:
        return 0
    from gpufleet.view.cli import INPUT_ERRORS
    if not args.policy:
        print("gpufleet report: error: --fleet needs --policy (the pools to measure).", file=sys.stderr)
        return 2
    try:
        print("fleet: %s" % build_fleet(args, args.out, time.time()))
    except INPUT_ERRORS as exc:
        print("gpufleet report: error: %s" % exc, file=sys.stderr)
        return 1
    return 0


def register(parser):
    parser.add_argument("--ledger", required=True, help="lifecycle ledger: SQLite path or postgresql:// URL (password in $GPUFLEET_LEDGER_PASSWORD)")
    parser.add_argument("--out", required=True, help="output folder for report.html and report.md")
    parser.add_argument("--gate-dir", help="folder of saved gate reports <node>.json (default: <ledger dir>/reports/gate for an SQLite ledger)")
    parser.add_argument("--run-id", help="only nodes touched by this run")
    parser.add_argument("--gang-id", help="include this gang's status")
    fleet = parser.add_argument_group("fleet page (fleet.html)")
    fleet.add_argument("--fleet", action="store_true", help="also write fleet.html: the seam, job starts, why of each pending job")
    fleet.add_argument("--policy", help="capacity policy YAML (the pools)")
    fleet.add_argument("--inventory", help="rack inventory (default: the ledger's nodes)")
    fleet.add_argument("--since", default="24h",
                       help="period start: a duration ago (default 24h; 2h30m), an epoch or ISO time")
    fleet.add_argument("--squeue-json", help="saved `squeue --json` output (default: run squeue --json)")
    fleet.add_argument("--sinfo-json", help="saved `sinfo --json` output (default: run sinfo --json)")
    parser.set_defaults(func=cmd_report)
