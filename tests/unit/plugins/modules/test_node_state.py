import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import ledger_postgres
from ansible_collections.gpufleet.baremetal.plugins.modules import node_state
from tests.pg import pg_url
from tests.pg import ledger_url  # noqa: F401  pylint: disable=unused-import  (fixture)


def run(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit) as exited:
        node_state.main()
    return json.loads(capsys.readouterr().out), exited.value.code


@pytest.fixture
def path(ledger_url):  # noqa: F811  pylint: disable=redefined-outer-name
    return ledger_url


def test_enroll_then_rerun_is_unchanged(capsys, path):
    result, code = run(capsys, ledger=path, node="n1", state="enrolled", reason="new", sku="lab")
    assert code == 0 and result["changed"] is True
    assert result["state"] == "enrolled" and result["before"] is None
    again, _unused = run(capsys, ledger=path, node="n1", state="enrolled", reason="new")
    assert again["changed"] is False and len(Ledger(path).history()) == 1


def test_check_mode_reports_the_change_and_writes_nothing(capsys, path):
    run(capsys, ledger=path, node="n1", state="enrolled", reason="new")
    result, _unused = run(capsys, ledger=path, node="n1", state="inspected", reason="r",
                          _ansible_check_mode=True, _ansible_diff=True)
    assert result["changed"] is True and result["state"] == "inspected"
    assert result["diff"] == {"before": {"n1": "enrolled"}, "after": {"n1": "inspected"}}
    assert Ledger(path).get("n1")["state"] == "enrolled"


def test_illegal_transition_fails_with_the_allowed_states(capsys, path):
    run(capsys, ledger=path, node="n1", state="enrolled", reason="new")
    result, code = run(capsys, ledger=path, node="n1", state="joined", reason="skip")
    assert code == 1 and result["failed"] is True
    assert "Illegal lifecycle transition" in result["msg"]
    assert result["allowed"] == ["inspected", "decommissioned"]


def test_batch_of_nodes_is_all_or_nothing(capsys, path):
    run(capsys, ledger=path, nodes=["a", "b"], state="enrolled", reason="rack")
    run(capsys, ledger=path, node="a", state="inspected", reason="r")
    result, code = run(capsys, ledger=path, nodes=["a", "b"], state="imaging", reason="r")
    assert code == 1 and '"b"' in result["msg"]
    assert Ledger(path).get("a")["state"] == "inspected"


def test_skip_if_past_reports_skipped(capsys, path):
    for target in ("enrolled", "inspected", "imaging", "configuring"):
        run(capsys, ledger=path, node="n1", state=target, reason="r")
    result, _unused = run(capsys, ledger=path, node="n1", state="imaging", reason="r", skip_if_past=True)
    assert result["skipped_past"] is True and result["state"] == "configuring" and not result["changed"]


@pytest.mark.parametrize("args,fragment", [
    ({"state": "enrolled", "reason": "r"}, "one of the following is required"),
    ({"node": "a", "nodes": ["b"], "state": "enrolled", "reason": "r"}, "mutually exclusive"),
    ({"node": "a", "state": "warm", "reason": "r"}, "value of state must be one of"),
    ({"node": "a", "state": "enrolled"}, "missing required arguments: reason"),
])
def test_argspec_rejects_bad_input(capsys, path, args, fragment):
    result, code = run(capsys, ledger=path, **args)
    assert code == 1 and fragment in result["msg"]


def test_check_mode_on_a_missing_ledger_creates_nothing(capsys, tmp_path):
    path = str(tmp_path / "new" / "ledger.sqlite")
    result, code = run(capsys, ledger=path, node="n1", state="enrolled", reason="new",
                       _ansible_check_mode=True)
    assert code == 0 and result["changed"] is True and result["state"] == "enrolled"
    assert list(tmp_path.iterdir()) == []


def test_warmth_tier_states_are_accepted(capsys, path):
    for target in ("enrolled", "inspected", "imaging", "configuring", "validating", "ready",
                   "parked", "waking", "hot"):
        result, code = run(capsys, ledger=path, node="n1", state=target, reason="r")
        assert code == 0 and result["state"] == target


def test_the_url_password_never_reaches_the_result(capsys):
    url = pg_url()
    user_part = url.split("://", 1)[1].split("@", 1)[0].split(":")[0]
    wrong = url.split("://", 1)[0] + "://%s:Wr0ngSecret7x@%s" % (user_part, url.split("@", 1)[1])
    with patch_module_args({"ledger": wrong, "node": "n1", "state": "enrolled", "reason": "r"}), \
            pytest.raises(SystemExit):
        node_state.main()
    out = capsys.readouterr().out
    result = json.loads(out)
    assert result["failed"] is True and "Cannot open the lifecycle ledger" in result["msg"]
    assert "Wr0ngSecret7x" not in out and "********" in result["msg"]


def test_missing_psycopg_is_named_only_for_a_url(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(ledger_postgres, "psycopg", None)
    result, code = run(capsys, ledger="postgresql://ctl@db.example/gpufleet", node="n1",
                       state="enrolled", reason="r")
    assert code == 1 and 'pip install "psycopg[binary]' in result["msg"]
    result, code = run(capsys, ledger=str(tmp_path / "l.sqlite"), node="n1", state="enrolled", reason="r")
    assert code == 0 and result["changed"] is True
