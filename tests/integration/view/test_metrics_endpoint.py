"""The exporter on a real loopback port, scraped with requests, checked against a filled ledger."""

import requests
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import decisions
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
from gpufleet.main import main
from gpufleet.view import sources
from gpufleet.view.metrics import LedgerCollector, serve
from tests.unit.gpufleet.view.history import H, T0
from tests.unit.gpufleet.view.ledger_fill import HOSTS, POLICY, fill, policy, write_gate


def _samples(text):
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def _scrape(server):
    reply = requests.get("http://127.0.0.1:%d/metrics" % server.server_port, timeout=10)
    reply.raise_for_status()
    return _samples(reply.text)


def test_scraped_numbers_match_the_ledger_and_follow_it(tmp_path):
    fill(tmp_path / "ledger.sqlite").close()
    path = str(tmp_path / "ledger.sqlite")
    collector = LedgerCollector(lambda: sources.open_ledger(path), policy(), write_gate(tmp_path),
                                clock=lambda: T0 + 4 * H, hosts=HOSTS)
    server = serve(0, "127.0.0.1", collector)
    try:
        got = _scrape(server)
        pool = ("pool", "h100")
        assert got[("gpufleet_nodes", (pool, ("state", "joined"), ("tier", "idle")))] == 1
        assert got[("gpufleet_nodes", (pool, ("state", "hot"), ("tier", "hot")))] == 1
        assert got[("gpufleet_nodes", (pool, ("state", "not_enrolled"), ("tier", "cold")))] == 1
        assert not [k for k in got if k[0] == "gpufleet_nodes" and ("state", "decommissioned") in k[1]]
        assert got[("gpufleet_node_state_seconds", (("node", "n1"), pool, ("state", "joined")))] == 2 * H
        assert got[("gpufleet_node_state_seconds", (("node", "n2"), pool, ("state", "hot")))] == 0.75 * H
        assert got[("gpufleet_gpus", (("category", "hot"), ("layer", "L2"), pool))] == 8
        assert got[("gpufleet_gate_checks", (("check", "dcgm_diag"), pool, ("verdict", "fail")))] == 1
        assert got[("gpufleet_gate_checks", (("check", "gpu_count"), pool, ("verdict", "pass")))] == 2
        assert got[("gpufleet_demand_gpus", (("kind", "pending_capacity"), pool))] == 32
        # 32 GPUs pending for capacity, 8 on their way (n2 hot): 24 short.
        assert got[("gpufleet_shortfall_gpus", (pool,))] == 24
        key = ("gpufleet_decisions_total", (("action", "wake"), ("outcome", "ok"), pool))
        assert got[key] == 1 and got[("gpufleet_ledger_up", ())] == 1
        # A decision written after the first scrape shows in the next one: read on every scrape.
        book = Ledger(path, clock=lambda: T0 + 4 * H)
        decisions.record_decision(book, "ctl-1", "h100", "wake", ["n4"], "hot floor 2", outcome="ok")
        failed = decisions.record_decision(book, "ctl-1", "h100", "wake", ["n5"], "hot floor 2")
        decisions.set_outcome(book, failed, "failed: playbook failed (rc=2), see build/runs/ctl-%d-wake" % failed)
        book.close()
        again = _scrape(server)
        assert again[key] == 2
        # free-text failures are one label value, never one per decision
        assert again[("gpufleet_decisions_total", (("action", "wake"), ("outcome", "failed"), pool))] == 1
        assert not [k for k in again if k[0] == "gpufleet_decisions_total" and "rc=2" in str(k)]
    finally:
        server.shutdown()


def test_an_unreadable_ledger_exposes_only_ledger_up_zero(tmp_path):
    def broken():
        raise sources.SourceError("no ledger")
    server = serve(0, "127.0.0.1", LedgerCollector(broken, policy()))
    try:
        got = _scrape(server)
        assert got[("gpufleet_ledger_up", ())] == 0
        assert not [k for k in got if k[0] == "gpufleet_nodes"]
    finally:
        server.shutdown()


def test_metrics_once_prints_the_exposition(tmp_path, capsys):
    fill(tmp_path / "ledger.sqlite").close()
    (tmp_path / "policy.yml").write_text(POLICY)
    assert main(["metrics", "--once", "--ledger", str(tmp_path / "ledger.sqlite"), "--policy",
                 str(tmp_path / "policy.yml")]) == 0
    assert "gpufleet_ledger_up 1.0" in capsys.readouterr().out


def test_controller_run_metrics_port_serves_the_ledger(tmp_path):
    from types import SimpleNamespace

    from gpufleet.commands.controller import start_metrics
    fill(tmp_path / "ledger.sqlite").close()
    args = SimpleNamespace(metrics_port=0, metrics_addr="127.0.0.1", ledger=str(tmp_path / "ledger.sqlite"),
                           lab=False, vars=None, slurm_prefix=None, inventory=None, spool=None)
    reconciler = SimpleNamespace(planning=SimpleNamespace(policy=policy()), hosts=HOSTS)
    server = start_metrics(args, reconciler)
    try:
        got = _scrape(server)
        assert got[("gpufleet_ledger_up", ())] == 1
        # The real clock here: the decision log does not depend on it.
        assert got[("gpufleet_decisions_total", (("action", "wake"), ("outcome", "ok"), ("pool", "h100")))] == 1
    finally:
        server.shutdown()
    assert start_metrics(SimpleNamespace(metrics_port=None), reconciler) is None
