"""The shipped dashboard is valid Grafana JSON and every expression names a real metric."""
import json
import os
import re

from prometheus_client.core import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from gpufleet.view import sources
from gpufleet.view.metrics import LedgerCollector
from tests.unit.gpufleet.view.history import H, T0
from tests.unit.gpufleet.view.ledger_fill import HOSTS, fill, policy, write_gate

DASHBOARD = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "contrib", "grafana", "gpufleet.json")


def _exposed(tmp_path):
    fill(tmp_path / "ledger.sqlite").close()
    path = str(tmp_path / "ledger.sqlite")
    registry = CollectorRegistry(auto_describe=False)
    registry.register(LedgerCollector(lambda: sources.open_ledger(path), policy(), write_gate(tmp_path),
                                      clock=lambda: T0 + 4 * H, hosts=HOSTS))
    text = generate_latest(registry).decode()
    return set(s.name for f in text_string_to_metric_families(text) for s in f.samples)


def _expressions(dashboard):
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            yield panel["title"], target["expr"]
    for variable in dashboard["templating"]["list"]:
        yield "variable " + variable["name"], variable["definition"]


def test_the_dashboard_is_grafana_json_with_placed_panels():
    with open(DASHBOARD) as handle:
        dashboard = json.load(handle)
    assert dashboard["uid"] and dashboard["schemaVersion"] >= 30
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)) >= 8
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24 and panel["targets"], panel["title"]
        assert panel["datasource"]["uid"] == "${DS_PROMETHEUS}"


def test_every_expression_names_a_metric_the_exporter_exposes(tmp_path):
    exposed = _exposed(tmp_path)
    with open(DASHBOARD) as handle:
        dashboard = json.load(handle)
    used = set()
    for title, expr in _expressions(dashboard):
        names = set(re.findall(r"\bgpufleet_[a-z_]+\b", expr))
        assert names, "%s: expression %r names no gpufleet metric" % (title, expr)
        missing = names - exposed
        assert not missing, "%s: %s not exposed (exposed: %s)" % (title, missing, sorted(exposed))
        used |= names
    # Every exported metric is on the dashboard somewhere.
    assert exposed - used == set()
