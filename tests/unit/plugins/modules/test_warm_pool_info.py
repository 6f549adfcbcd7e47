import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
from ansible_collections.gpufleet.baremetal.plugins.modules import warm_pool_info
from tests.pg import ledger_url  # noqa: F401  pylint: disable=unused-import  (fixture)


def run(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit) as exited:
        warm_pool_info.main()
    return json.loads(capsys.readouterr().out), exited.value.code


def test_plans_a_refill_per_tier(capsys, ledger_url):  # noqa: F811  pylint: disable=redefined-outer-name
    path = ledger_url
    book = Ledger(path)
    for name in ("a", "b", "c"):
        book.transition(name, "enrolled", "t", "new", sku="lab")
    result, code = run(capsys, ledger=path, node_tiers={"a": "gold"}, policy=[
        {"sku": "lab", "tier": "gold", "min_ready": 1}, {"sku": "lab", "min_ready": 1}])
    assert code == 0 and result["changed"] is False
    gold, default = result["plans"]
    assert gold["provision"] == ["a"] and default["provision"] == ["b"]


def test_invalid_policy_fails(capsys, tmp_path):
    path = str(tmp_path / "l.sqlite")
    Ledger(path).close()
    result, code = run(capsys, ledger=path, policy=[{"sku": "lab", "min_ready": 3, "max_ready": 1}])
    assert code == 1 and "0 <= min_ready <= max_ready" in result["msg"]
