"""Rollouts in the ledger, on SQLite and PostgreSQL (GPUFLEET_TEST_PG_URL)."""
import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import rollouts
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger


def test_start_records_a_canary_phase_rollout(ledger):
    rid = rollouts.start_rollout(ledger, "gpu", "v1", "v2", "alice", "new driver", gate_profile="strict")
    row = rollouts.active_rollout(ledger, "gpu")
    assert row["id"] == rid and row["phase"] == "canary" and row["canaries"] == []
    assert (row["from_version"], row["to_version"], row["gate_profile"]) == ("v1", "v2", "strict")
    assert rollouts.active_rollout(ledger, "other") is None


def test_one_unfinished_rollout_per_pool(ledger):
    rid = rollouts.start_rollout(ledger, "gpu", "v1", "v2", "alice", "r")
    with pytest.raises(LedgerError, match="already has rollout %s" % rid):
        rollouts.start_rollout(ledger, "gpu", "v1", "v3", "bob", "r")
    rollouts.start_rollout(ledger, "cpu", "v1", "v3", "bob", "r")      # another pool: fine
    assert rollouts.set_phase(ledger, rid, "done", "pool on v2")
    assert rollouts.start_rollout(ledger, "gpu", "v2", "v3", "bob", "r") > rid


def test_canaries_and_phase_survive_a_reopen(ledger, ledger_url, clock):
    rid = rollouts.start_rollout(ledger, "gpu", "v1", "v2", "alice", "r")
    rollouts.set_canaries(ledger, rid, ["n2", "n1"])
    assert rollouts.set_phase(ledger, rid, "rolling_back", "halted: 1 canary failed")
    ledger.close()
    again = Ledger(ledger_url, clock=clock)
    try:
        row = rollouts.rollouts(again, pool="gpu")[0]
        assert row["canaries"] == ["n1", "n2"] and row["phase"] == "rolling_back"
        assert row["reason"] == "halted: 1 canary failed"
        assert [r["id"] for r in rollouts.rollouts(again, active_only=True)] == [rid]
    finally:
        again.close()


def test_set_phase_with_expect_loses_a_race_without_writing(ledger):
    rid = rollouts.start_rollout(ledger, "gpu", "v1", "v2", "alice", "r")
    assert rollouts.set_phase(ledger, rid, "rolled_back", "operator", expect=("rolling_back",)) is False
    assert rollouts.active_rollout(ledger, "gpu")["phase"] == "canary"


@pytest.mark.parametrize("call", [
    lambda l: rollouts.set_phase(l, 999, "done", "x"),
    lambda l: rollouts.set_canaries(l, 999, ["n1"]),
    lambda l: rollouts.set_phase(l, 1, "paused", "x"),
    lambda l: rollouts.start_rollout(l, "gpu", "", "v2", "alice", "r"),
])
def test_refusals_name_the_rollout(ledger, call):
    with pytest.raises(LedgerError):
        call(ledger)
