"""Wrong credentials, unreachable BMC, unknown system, unsupported reset type, bad TLS:
each is one line that names the node and the cause."""
import pytest

from tests.integration.redfish.lab_fixture import free_port, run_playbook

pytestmark = pytest.mark.integration

CASES = {
    "Wrong credentials": ("refused the credentials (HTTP 401)",),
    "Unreachable BMC": ("BMC of node dead-bmc at https://127.0.11.99", "did not answer",
                        "Connection refused"),
    "Unknown system id": ("System 'no-such-system' not found on the BMC of node ghost",
                          "Available: "),
    "Unsupported reset type": ("needs reset type PowerCycle, which the BMC of node raw-n01",
                               "Allowed: On, ForceOff"),
    "Untrusted certificate": ("TLS verification of the certificate of the BMC of node",
                              "Set ca_path to the CA"),
}


@pytest.fixture(scope="module")
def results(lab, conn):
    extra = dict(conn, rf_nodes=lab.nodes, rf_raw_nodes=lab.raw_nodes,
                 rf_dead="127.0.11.99:%d" % free_port("127.0.11.99"))
    rc, tasks, out = run_playbook("errors.yml", extra)
    assert lab.cfg["password"] not in out and "not-the-password" not in out
    return rc, tasks


@pytest.mark.parametrize("task", sorted(CASES))
def test_one_clear_line(results, lab, task):
    rc, tasks = results
    result = tasks[task]
    # failed_when: false keeps the play going; the module's failure is in its result
    assert result.get("failed_when_result") is False and result["failed_nodes"], result
    msg = result["msg"]
    assert "\n" not in msg and "Traceback" not in msg
    for fragment in CASES[task]:
        assert fragment in msg, msg
    if task == "Wrong credentials":
        assert lab.nodes[0]["baseuri"] in msg
    if task == "Untrusted certificate":
        assert "BMC of node %s at https://" % lab.nodes[0]["name"] in msg


def test_failure_budget_keeps_the_task_green(results):
    rc, tasks = results
    result = tasks["One bad node within the failure budget"]
    assert rc == 0 and not result.get("failed")
    assert result["failed_nodes"] == ["ghost"] and result["summary"]["failed"] == 1
    ghost = result["nodes"][3]
    assert ghost["failed"] and "not found on the BMC of node ghost" in ghost["error"]
