"""``gpufleet metrics``: serve the fleet metrics over HTTP (or print them once).

The controller loop starts the same server with ``--metrics-port``
(``gpufleet.view.metrics.serve``); this command serves them without the loop, e.g. on a
read replica of a PostgreSQL ledger.
"""
import sys
import time

NAME = "metrics"
HELP = "serve the fleet's Prometheus metrics from the ledger (nodes by tier and state, gates, demand, decisions)"


def collector_from_args(args):
    from gpufleet.capacity.policy import load_policy
    from gpufleet.view import sources
    from gpufleet.view.cli import load_hosts
    from gpufleet.view.metrics import LedgerCollector
    return LedgerCollector(lambda: sources.open_ledger(args.ledger), load_policy(args.policy),
                           args.gate_dir, hosts=load_hosts(args.inventory))


def cmd_metrics(args):
    from prometheus_client.core import CollectorRegistry
    from prometheus_client.exposition import generate_latest

    from gpufleet.view.cli import INPUT_ERRORS
    from gpufleet.view.metrics import serve

    try:
        collector = collector_from_args(args)
    except INPUT_ERRORS as exc:
        print("gpufleet metrics: error: %s" % exc, file=sys.stderr)
        return 1
    if args.once:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(collector)
        sys.stdout.write(generate_latest(registry).decode())
        return 0
    server = serve(args.port, args.addr, collector)
    print("serving http://%s:%d/metrics (Ctrl-C stops)" % (args.addr, server.server_port), flush=True)
    try:
        while True:
            time.sleep(3600)
    finally:
        server.shutdown()


def register(parser):
    parser.add_argument("--ledger", required=True, help="lifecycle ledger: SQLite file or postgresql:// URL")
    parser.add_argument("--policy", required=True, help="capacity policy YAML (docs/capacity.md)")
    parser.add_argument("--inventory", help="rack inventory (default: the ledger's nodes)")
    parser.add_argument("--gate-dir", help="saved gate reports <node>.json")
    parser.add_argument("--port", type=int, default=9464, help="TCP port (default 9464)")
    parser.add_argument("--addr", default="127.0.0.1", help="address to bind (default 127.0.0.1: loopback only)")
    parser.add_argument("--once", action="store_true", help="print the metrics once and exit")
    parser.set_defaults(func=cmd_metrics)
