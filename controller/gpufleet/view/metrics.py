"""The controller's Prometheus endpoint: a custom collector that reads the ledger on every
scrape (the record of truth, never a cached copy) and the HTTP server the loop starts.

    server = serve(port, "127.0.0.1", LedgerCollector(opener, policy, gate_dir))
    ...
    server.shutdown()

``opener()`` returns an open ledger (closed after each scrape); ``policy`` is the planner's
Policy (gpufleet.capacity.policy). When a scrape cannot read
the ledger, only ``gpufleet_ledger_up 0`` is exposed and the reason is logged: no stale
numbers are served as if they were current.
"""
import logging
import time

from prometheus_client.core import CollectorRegistry, CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import start_http_server

from gpufleet.view import sources
from gpufleet.view.metric_values import METRICS, metric_values

__all__ = ["LedgerCollector", "serve", "families"]

LOG = logging.getLogger("gpufleet.metrics")


def families(values):
    """Prometheus metric families from ``metric_values`` output."""
    for name, (kind, text, labels) in METRICS.items():
        family = (CounterMetricFamily if kind == "counter" else GaugeMetricFamily)(name, text, labels=labels)
        for label_values, value in values.get(name, ()):
            family.add_metric(list(label_values), value)
        yield family


class LedgerCollector:
    """Reads ledger, policy pools and gate reports on each ``collect()``."""

    def __init__(self, opener, policy, gate_dir=None, clock=time.time, hosts=None):
        self.opener, self.policy, self.gate_dir, self.clock = opener, policy, gate_dir, clock
        self.hosts = hosts

    def _read(self):
        from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import decisions
        ledger = self.opener()
        try:
            inputs = sources.load(ledger, self.policy, self.clock(), gate_dir=self.gate_dir, hosts=self.hosts)
            return metric_values(inputs, decisions.latest_demand(ledger), decisions.decision_counts(ledger))
        finally:
            ledger.close()

    def collect(self):
        try:
            values = self._read()
        except Exception as exc:  # noqa: BLE001 - a scrape must answer; the reason goes to the log
            LOG.error("metrics scrape could not read the ledger: %s", exc)
            values = {"gpufleet_ledger_up": [((), 0)]}
        return list(families(values))

    def describe(self):
        return []


def serve(port, addr, collector):
    """Serve ``collector`` on http://addr:port/metrics in a daemon thread; returns the server
    (``server.shutdown()`` stops it; ``server.server_port`` is the bound port)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    server, _thread = start_http_server(port, addr=addr, registry=registry)
    return server
