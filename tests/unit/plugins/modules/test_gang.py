import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
from ansible_collections.gpufleet.baremetal.plugins.modules import gang
from tests.pg import ledger_url  # noqa: F401  pylint: disable=unused-import  (fixture)

READY = ["enrolled", "inspected", "imaging", "configuring", "validating", "ready"]


def run(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit) as exited:
        gang.main()
    return json.loads(capsys.readouterr().out), exited.value.code


@pytest.fixture
def path(ledger_url):  # noqa: F811  pylint: disable=redefined-outer-name
    path = ledger_url
    book = Ledger(path)
    for name in ("n1", "n2"):
        for target in READY:
            book.transition(name, target, "t", "setup", sku="lab")
    book.transition("n3", "enrolled", "t", "setup", sku="lab")
    return path


def test_plan_admit_sequence(capsys, path):
    planned, code = run(capsys, ledger=path, gang_id="g", state="planned", sku="lab", size=2)
    assert code == 0 and planned["changed"] and planned["gang"]["pool"] == ["n1", "n2"]
    locked, _unused = run(capsys, ledger=path, gang_id="g", state="admitting")
    assert locked["gang"]["status"] == "admitting"
    done, _unused = run(capsys, ledger=path, gang_id="g", state="admitted", who="ci")
    assert {m["state"] for m in done["gang"]["members"]} == {"joined"}
    again, _unused = run(capsys, ledger=path, gang_id="g", state="admitted")
    assert again["changed"] is False


def test_check_mode_plans_without_reserving(capsys, path):
    result, _unused = run(capsys, ledger=path, gang_id="g", state="planned", sku="lab", size=3,
                          _ansible_check_mode=True, _ansible_diff=True)
    assert result["changed"] and result["gang"]["provision"] == ["n3"]
    assert result["diff"]["before"] == {} and result["diff"]["after"]["status"] == "planned"
    assert all(n["gang_id"] is None for n in Ledger(path).nodes())


def test_rollback_records_node_reasons(capsys, path):
    run(capsys, ledger=path, gang_id="g", state="planned", sku="lab", size=3)
    book = Ledger(path)
    for target in READY[1:5]:
        book.transition("n3", target, "t", "provision")
    result, code = run(capsys, ledger=path, gang_id="g", state="rolled_back", reason="n3 failed",
                       node_reasons={"n3": "gate: gpu phase failed"})
    assert code == 0 and result["gang"]["status"] == "rolled_back"
    assert Ledger(path).get("n3")["reason"] == "gate: gpu phase failed"
    assert {m["node"]: m["after"] for m in result["gang"]["rollback"]} == {
        "n1": "ready", "n2": "ready", "n3": "failed"}


def test_admitting_an_unready_gang_fails(capsys, path):
    run(capsys, ledger=path, gang_id="g", state="planned", sku="lab", size=3)
    result, code = run(capsys, ledger=path, gang_id="g", state="admitting")
    assert code == 1 and "n3=enrolled" in result["msg"] and result["not_ready"] == {"n3": "enrolled"}


@pytest.mark.parametrize("args,fragment", [
    ({"state": "planned", "sku": "lab"}, "size"),
    ({"state": "rolled_back"}, "reason"),
])
def test_required_if(capsys, path, args, fragment):
    result, code = run(capsys, ledger=path, gang_id="g", **args)
    assert code == 1 and fragment in result["msg"]


def test_substituted_replaces_a_member_with_a_spare(capsys, path):
    run(capsys, ledger=path, gang_id="g", state="planned", sku="lab", size=2, candidates=["n1", "n2"])
    result, code = run(capsys, ledger=path, gang_id="g", state="substituted", node="n2",
                       reason="missed its deadline")
    assert code == 0 and result["changed"] is True
    assert [m["node"] for m in result["gang"]["members"]] == ["n1", "n3"]
    assert result["gang"]["substitutions"][0]["replaced_by"] == "n3"
