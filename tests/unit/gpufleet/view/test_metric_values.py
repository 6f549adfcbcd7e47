"""The node state as a timestamp of its change (Prometheus guidance), beside the age gauge."""
from prometheus_client.core import CollectorRegistry

from gpufleet.view import sources
from gpufleet.view.metrics import LedgerCollector
from tests.unit.gpufleet.view.history import H, T0
from tests.unit.gpufleet.view.ledger_fill import HOSTS, fill, policy


def test_node_state_since_is_the_time_of_the_change_and_does_not_move_with_the_clock(tmp_path):
    fill(tmp_path / "ledger.sqlite").close()
    path = str(tmp_path / "ledger.sqlite")
    now = [T0 + 4 * H]
    registry = CollectorRegistry(auto_describe=False)
    registry.register(LedgerCollector(lambda: sources.open_ledger(path), policy(), clock=lambda: now[0], hosts=HOSTS))

    def get(name, node, state):
        return registry.get_sample_value(name, {"pool": "h100", "node": node, "state": state})
    since = get("gpufleet_node_state_since_timestamp_seconds", "n1", "joined")
    assert since == T0 + 2 * H     # joined 2 h before the scrape (the same fill as the age gauge)
    assert get("gpufleet_node_state_seconds", "n1", "joined") == 2 * H
    now[0] += H
    assert get("gpufleet_node_state_since_timestamp_seconds", "n1", "joined") == since
    assert get("gpufleet_node_state_seconds", "n1", "joined") == 3 * H
    assert get("gpufleet_node_state_since_timestamp_seconds", "n2", "hot") == T0 + 4 * H - 0.75 * H
