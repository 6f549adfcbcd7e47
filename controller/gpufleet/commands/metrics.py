"""``gpufleet metrics``: serve the fleet metrics over HTTP (or print them once).

The controller loop starts the same server with ``--metrics-port``
(``gpufleet.view.metrics.serve``); this command serves them without the loop, e.g. on a
read replica of a PostgreSQL ledger.
"""
import sys
import time

import yaml
from prometheus_client.core import CollectorRegistry
from prometheus_client.exposition import generate_latest

from gpufleet.view import sources
from gpufleet.view.cli import read_text
from gpufleet.view.metrics import LedgerCollector, serve

NAME = "metrics"
HELP = "serve the fleet's Prometheus metrics from the ledger (nodes by tier and state, gates, demand, decisions)"


def collector_from_args(args):
    policy = yaml.safe_load(read_text(args.policy, "policy")) or {}
    if not policy.get("pools"):
        sources.pools_from_policy(policy, [])  # raises naming the missing pools mapping
    return LedgerCollector(lambda: sources.open_ledger(args.ledger), policy, args.gate_dir)


def cmd_metrics(args):
    try:
        collector = collector_from_args(args)
    except (sources.SourceError, yaml.YAMLError) as exc:
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
    parser.add_argument("--policy", required=True, help="capacity policy YAML (its pools mapping)")
    parser.add_argument("--gate-dir", help="saved gate reports <node>.json")
    parser.add_argument("--port", type=int, default=9464, help="TCP port (default 9464)")
    parser.add_argument("--addr", default="127.0.0.1", help="address to bind (default 127.0.0.1: loopback only)")
    parser.add_argument("--once", action="store_true", help="print the metrics once and exit")
    parser.set_defaults(func=cmd_metrics)
