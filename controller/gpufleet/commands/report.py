"""``gpufleet report``: write the HTML + Markdown bring-up report from the ledger."""
import os
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


def cmd_report(args):
    gate_dir = args.gate_dir
    if not gate_dir and "://" not in args.ledger:  # beside an SQLite file; a URL has no folder
        gate_dir = os.path.join(os.path.dirname(os.path.abspath(args.ledger)), "reports", "gate")
    paths = build(args.ledger, args.out, gate_dir, args.run_id, args.gang_id)
    print("report: %s\nmarkdown: %s" % (paths["html"], paths["markdown"]))
    return 0


def register(parser):
    parser.add_argument("--ledger", required=True, help="lifecycle ledger: SQLite path or postgresql:// URL (password in $GPUFLEET_LEDGER_PASSWORD)")
    parser.add_argument("--out", required=True, help="output folder for report.html and report.md")
    parser.add_argument("--gate-dir", help="folder of saved gate reports <node>.json (default: <ledger dir>/reports/gate for an SQLite ledger)")
    parser.add_argument("--run-id", help="only nodes touched by this run")
    parser.add_argument("--gang-id", help="include this gang's status")
    parser.set_defaults(func=cmd_report)
