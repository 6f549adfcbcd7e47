import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
from ansible_collections.gpufleet.baremetal.plugins.modules import ledger_info
from tests.pg import ledger_url  # noqa: F401  pylint: disable=unused-import  (fixture)


def run(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit) as exited:
        ledger_info.main()
    return json.loads(capsys.readouterr().out), exited.value.code


def test_reads_states_and_history(capsys, ledger_url):  # noqa: F811  pylint: disable=redefined-outer-name
    path = ledger_url
    book = Ledger(path)
    book.transition("a", "enrolled", "t", "new", sku="lab")
    book.transition("a", "inspected", "t", "facts")
    book.transition("b", "enrolled", "t", "new", sku="h100")
    result, code = run(capsys, ledger=path, sku="lab", history=True)
    assert code == 0 and result["changed"] is False
    assert result["states"] == {"a": "inspected"}
    assert [h["to_state"] for h in result["history"]] == ["enrolled", "inspected"]


def test_missing_ledger_is_a_clear_failure(capsys, tmp_path):
    result, code = run(capsys, ledger=str(tmp_path / "none.sqlite"))
    assert code == 1 and "No lifecycle ledger" in result["msg"]
    assert not (tmp_path / "none.sqlite").exists()


def test_unknown_gang_fails(capsys, ledger_url):  # noqa: F811  pylint: disable=redefined-outer-name
    path = ledger_url
    Ledger(path).close()
    result, code = run(capsys, ledger=path, gang_id="nope")
    assert code == 1 and "Plan it first" in result["msg"]


def test_check_decisions_demand_and_lease(capsys, ledger_url):  # noqa: F811  pylint: disable=redefined-outer-name
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import decisions, lease

    book = Ledger(ledger_url)
    book.transition("a", "enrolled", "t", "new")
    decisions.record_decision(book, "ctl-a", "lab", "wake", ["a"], "first")
    decisions.record_decision(book, "ctl-a", "lab", "park", ["a"], "second")
    decisions.record_demand(book, "lab", 1800000000, 8, 8, 0)
    lease.acquire_lease(book, "capacity", "ctl-a", 3600, book.clock())
    result, code = run(capsys, ledger=ledger_url, check=True, decisions=1, demand_pool="lab",
                       lease="capacity")
    assert code == 0 and result["problems"] == []
    assert [d["reason"] for d in result["decisions"]] == ["second"]
    assert result["demand"][0]["gpus_pending"] == 8 and result["lease"]["holder"] == "ctl-a"


def test_returns_a_pools_rollouts(capsys, ledger_url):  # noqa: F811  pylint: disable=redefined-outer-name
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import rollouts
    book = Ledger(ledger_url)
    rollouts.start_rollout(book, "gpu", "v1", "v2", "alice", "new driver")
    rollouts.start_rollout(book, "cpu", "v1", "v3", "alice", "other pool")
    book.close()
    result, code = run(capsys, ledger=ledger_url, rollouts="gpu")
    assert code == 0 and result["changed"] is False
    assert [(r["pool"], r["to_version"], r["phase"]) for r in result["rollouts"]] == [("gpu", "v2", "canary")]
    assert "rollouts" not in run(capsys, ledger=ledger_url)[0]


def test_returns_current_enrollments_of_the_nodes_read(capsys, ledger_url):  # noqa: F811  pylint: disable=redefined-outer-name
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import enrollments
    book = Ledger(ledger_url)
    for node in ("n1", "n2"):
        book.transition(node, "enrolled", who="t", why="t")
    enrollments.record(book, "n1", "aa" * 32, "PEM-1", "name-1", "alice")
    enrollments.record(book, "n1", "bb" * 32, "PEM-2", "name-2", "alice", reason="TPM replaced", reenroll=True)
    book.close()
    result, code = run(capsys, ledger=ledger_url, enrollments=True)
    assert code == 0 and result["changed"] is False
    assert sorted(result["enrollments"]) == ["n1"]                      # n2 never enrolled
    assert result["enrollments"]["n1"]["ek_fingerprint"] == "bb" * 32     # the current one, not the replaced
    only_n2, _ = run(capsys, ledger=ledger_url, enrollments=True, nodes=["n2"])
    assert only_n2["enrollments"] == {}
    assert "enrollments" not in run(capsys, ledger=ledger_url)[0]
