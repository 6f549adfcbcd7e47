"""The ledger reason of a failed task: a node that stopped answering is named as such."""
import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import failure_reason as fr

# What ansible-core 2.19 registered when the lab cut lab-r2n1's power mid-gate.
CUT_OFF = {"failed": True, "msg": "Module result deserialization failed: No start of json char found",
           "module_stdout": "", "module_stderr": "", "rc": 137, "_ansible_parsed": False}
UNREACHABLE = {"unreachable": True, "changed": False,
               "msg": "Failed to create temporary directory. In some cases, you may have been able to ..."}
# What the lab registered when lab-r1n4 lost power before the gang's join role copied the munge key.
COPY_TO_A_DEAD_CONTAINER = {"failed": True, "msg": "Task failed: Failed to set permissions on remote files "
                            "(rc: 1, err: Error response from daemon: Container a9faf1e418d0 is not running )"}
# What the lab registered for the join role's looped "Ensure munged and slurmd run" when lab-r1n4
# lost power under it (2026-11-24 22:56 UTC): the loop's own message says nothing.
LOOP_ON_A_DEAD_CONTAINER = {"failed": True, "msg": "One or more items failed", "results": [
    {"changed": False, "item": "munge", "msg": "Module result deserialization failed: No start of json char found",
     "module_stderr": "", "module_stdout": "", "rc": 137, "failed": True},
    {"changed": False, "item": "slurmd", "failed": True,
     "msg": "Task failed: failed to transfer file /root/.ansible/tmp/x to /root/.ansible/tmp/y/AnsiballZ_command.py:"
            "\n\nError response from daemon: Container 9d9218c2efa9 is not running"},
]}
LOOP_OF_ORDINARY_FAILURES = {"failed": True, "msg": "One or more items failed", "results": [
    {"failed": True, "item": "slurm.conf", "msg": "Destination directory /etc/slurm does not exist"}, "not a dict"]}
POWER_OFF = {"changed": False, "facts": {"system": {"power_state": "Off", "health": "OK"}}}
POWER_ON = {"changed": False, "facts": {"system": {"power_state": "On"}}}
BMC_DOWN = {"failed": True, "msg": "BMC of node lab-r2n1 did not answer https://127.0.20.2:8443 within 5 s"}


@pytest.mark.parametrize("result", [
    CUT_OFF, UNREACHABLE, dict(CUT_OFF, module_stdout="  \n"), COPY_TO_A_DEAD_CONTAINER, LOOP_ON_A_DEAD_CONTAINER,
    {"failed": True, "msg": "Error response from daemon: No such container: gpufleet-lab-n1"},
    {"failed": True, "msg": "Failed to connect to the host via ssh: ssh: connect to host 10.0.0.7 port 22: No route"},
])
def test_a_node_that_went_away_is_a_lost_connection(result):
    assert fr.connection_lost(result) is True


@pytest.mark.parametrize("result", [
    dict(CUT_OFF, module_stdout="Traceback (most recent call last): ..."),  # a broken module, not a lost node
    {"failed": True, "msg": "acceptance gate failed at phase gpu: ..."},
    {"failed": True, "msg": "non-zero return code", "rc": 1},
    {"failed": True, "msg": "slurmd is not running on n1"},  # a task's own words, not the transport's
    # the node never came back: the wait's timeout is the reason (its last try's error is embedded)
    {"failed": True, "msg": "timed out waiting for ping module test: Error response from daemon: "
                            "Container 0f3 is not running"},
    LOOP_OF_ORDINARY_FAILURES, {"failed": True, "msg": "One or more items failed", "results": "not a list"},
    {}, None, "text",
])
def test_other_failures_are_not_a_lost_connection(result):
    assert fr.connection_lost(result) is False


def test_power_lost_mid_gate_says_the_node_lost_power_during_the_gate():
    reason = fr.failure_reason(CUT_OFF, "Run the acceptance gate", "lab-r2n1", "validating", POWER_OFF)
    assert reason.startswith('lab-r2n1 stopped answering during the acceptance gate (task "Run the acceptance gate"): '
                             "its BMC reports PowerState Off afterwards: the node lost power;")
    assert "re-run the playbook" in reason
    # Ansible's words stay, last, for whoever debugs the run
    assert reason.endswith("Ansible reported: Module result deserialization failed: No start of json char found")


def test_a_node_still_powered_on_crashed_or_lost_its_network():
    reason = fr.failure_reason(UNREACHABLE, "Apply per-node state", "n7", "configuring", POWER_ON)
    assert "n7 stopped answering during configuration" in reason
    assert "PowerState On afterwards: the node crashed, rebooted or lost its network" in reason
    assert "lost power" not in reason


def test_an_unreadable_bmc_is_said_and_the_node_still_fails():
    reason = fr.failure_reason(CUT_OFF, "Image the node", "n7", "imaging", BMC_DOWN)
    assert "n7 stopped answering during imaging" in reason
    assert "its BMC could not be read afterwards (BMC of node lab-r2n1 did not answer" in reason


@pytest.mark.parametrize("power", [None, {}, {"skipped": True, "changed": False}])
def test_a_bmc_not_read_is_said(power):
    reason = fr.failure_reason(CUT_OFF, "Run the acceptance gate", "n1", "validating", power)
    assert "its BMC was not read; check the node's power" in reason


def test_a_bmc_answer_without_a_power_state_is_not_taken_for_one():
    assert fr.bmc_power({"facts": {"system": {"power_state": None}}}) == (None, "it answered without a PowerState")
    assert "could not be read afterwards (it answered without a PowerState)" in fr.lost_node_reason(
        "n1", "validating", {"facts": {"system": {}}})


def test_other_failures_keep_the_task_and_its_message():
    result = {"failed": True, "msg": "acceptance gate failed at phase gpu: GPU 3 DCGM diag Fail (report r1)"}
    assert fr.failure_reason(result, "Stop a node that failed the gate", "n1", "validating", POWER_ON) == \
        "Stop a node that failed the gate: acceptance gate failed at phase gpu: GPU 3 DCGM diag Fail (report r1)"


@pytest.mark.parametrize("result,expected", [
    ({"failed": True, "msg": "", "reason": "timed out"}, "t: timed out"),
    ({"failed": True}, "t: failed"),
    (None, "t: failed"),
])
def test_an_empty_message_falls_back_to_the_reason_then_failed(result, expected):
    assert fr.failure_reason(result, "t", "n1") == expected


def test_long_messages_are_cut_to_one_line_of_600_characters():
    reason = fr.failure_reason({"failed": True, "msg": "line one\nline two " + "x" * 900}, "t", "n1")
    assert "\n" not in reason and reason.endswith("...")
    assert len(reason) == len("t: ") + 600


@pytest.mark.parametrize("state,words", [
    ("imaging", "during imaging"), ("configuring", "during configuration"),
    ("validating", "during the acceptance gate"), ("ready", "during registration with the scheduler"),
    ("recycling", "during its recycling step"), ("", "during provisioning"), (None, "during provisioning"),
])
def test_the_step_is_named_from_the_ledger_state(state, words):
    assert words in fr.lost_node_reason("n1", state, POWER_OFF)


def test_a_lost_gang_member_names_the_gang():
    reason = fr.lost_node_reason("lab-r1n4", "ready", POWER_OFF, "gang g1, found unreachable")
    assert reason.startswith("lab-r1n4 stopped answering during registration with the scheduler (gang g1, found "
                             "unreachable): its BMC reports PowerState Off afterwards: the node lost power;")


def test_a_task_on_a_container_that_lost_power_names_the_step_and_keeps_the_task():
    reason = fr.failure_reason(COPY_TO_A_DEAD_CONTAINER, "Install the munge key", "lab-r1n4", "ready", POWER_OFF)
    assert reason.startswith('lab-r1n4 stopped answering during registration with the scheduler (task "Install the '
                             'munge key"): its BMC reports PowerState Off afterwards: the node lost power;'), reason
    assert "Ansible reported: Task failed: Failed to set permissions" in reason


def test_a_looped_task_that_met_the_dead_node_names_it_with_the_item_s_words():
    reason = fr.failure_reason(LOOP_ON_A_DEAD_CONTAINER, "Ensure munged and slurmd run", "lab-r1n4", "ready", POWER_OFF)
    assert reason.startswith('lab-r1n4 stopped answering during registration with the scheduler (task "Ensure munged '
                             'and slurmd run"): its BMC reports PowerState Off afterwards: the node lost power;'), reason
    # the first item that met the dead node says what Ansible saw, not the loop's "One or more items failed"
    assert reason.endswith("Ansible reported: Module result deserialization failed: No start of json char found")


def test_a_looped_task_with_ordinary_failures_keeps_the_loop_s_message():
    reason = fr.failure_reason(LOOP_OF_ORDINARY_FAILURES, "Install the Slurm files", "n7", "ready", POWER_ON)
    assert reason == "Install the Slurm files: One or more items failed"


# What the lab registered with pipelining when lab-r1n4 was powered off before the gang: the
# slurp of the gate report (failed_when: false) got no output, and the next task failed with it.
GATE_REPORT_OF_A_DEAD_CONTAINER = {"failed": True, "changed": False, "msg": (
    "Gate report /var/lib/gpufleet/gate/report.json is missing on lab-r1n4 (Module result deserialization "
    "failed: No start of json char found): the node is not admitted.")}
NO_ANSWER = {"failed": True, "elapsed": 10, "msg": "timed out waiting for ping module test: MODULE FAILURE"}
ANSWERED = {"changed": False, "elapsed": 0}
DELEGATED = {"failed": True, "msg": "non-zero return code", "rc": 1,
             "_ansible_delegated_vars": {"ansible_delegated_host": "localhost", "ansible_connection": "local"}}


@pytest.mark.parametrize("result", [
    GATE_REPORT_OF_A_DEAD_CONTAINER, {"failed": True, "msg": "non-zero return code", "rc": 1},
    dict(CUT_OFF, module_stdout="Traceback (most recent call last): ..."),
])
def test_a_failure_on_the_node_that_does_not_say_asks_the_node(result):
    assert fr.answer_unknown(result) is True
    assert fr.connection_lost(result) is False  # not asked: the task's own failure
    assert fr.connection_lost(result, ANSWERED) is False
    assert fr.connection_lost(result, NO_ANSWER) is True
    assert fr.connection_lost(result, {"unreachable": True, "msg": "Failed to connect"}) is True
    assert fr.connection_lost(result, {"skipped": True, "false_condition": "x"}) is False


@pytest.mark.parametrize("result", [
    CUT_OFF, UNREACHABLE, LOOP_ON_A_DEAD_CONTAINER, COPY_TO_A_DEAD_CONTAINER,  # the result says it went away
    {"failed": True, "msg": "timed out waiting for ping module test: ..."},  # the wait's own words are the reason
    DELEGATED,  # ran on another host: the node may be off on purpose (imaging)
    {"failed": True, "msg": "One or more items failed", "results": [dict(DELEGATED, item="a")]},
    {}, None, "text",
])
def test_a_failure_the_result_decides_or_that_ran_elsewhere_does_not_ask_the_node(result):
    assert fr.answer_unknown(result) is False


@pytest.mark.parametrize("result", [
    DELEGATED, {"failed": True, "msg": "timed out waiting for ping module test: ..."},
])
def test_a_probe_does_not_turn_a_delegated_failure_or_a_timed_out_wait_into_a_lost_node(result):
    assert fr.connection_lost(result, NO_ANSWER) is False


def test_a_node_that_did_not_answer_after_its_task_failed_is_named_with_the_task_s_words():
    reason = fr.failure_reason(GATE_REPORT_OF_A_DEAD_CONTAINER, "Fail when the gate report is missing", "lab-r1n4",
                               "ready", POWER_OFF, NO_ANSWER)
    assert reason.startswith('lab-r1n4 stopped answering during registration with the scheduler (task "Fail when '
                             'the gate report is missing"): its BMC reports PowerState Off afterwards: the node lost '
                             'power;'), reason
    assert reason.endswith("Ansible reported: Gate report /var/lib/gpufleet/gate/report.json is missing on lab-r1n4 "
                           "(Module result deserialization failed: No start of json char found): the node is not "
                           "admitted."), reason


def test_a_node_that_answered_after_its_task_failed_keeps_the_task_s_message():
    result = {"failed": True, "msg": "acceptance gate failed at phase gpu: 7 of 8 GPUs"}
    assert fr.failure_reason(result, "Run the acceptance gate", "n1", "validating", {}, ANSWERED) == (
        "Run the acceptance gate: acceptance gate failed at phase gpu: 7 of 8 GPUs")
