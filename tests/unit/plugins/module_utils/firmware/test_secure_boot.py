"""firmware.secure_boot: the node's efivars and kernel line, the BMC's SecureBoot facts, and the
join decision, on the readings of an enforcing and a Secure-Boot-off boot (fixtures/) and every
fail-closed case."""
import base64
import os

import pytest
import yaml

from ansible_collections.gpufleet.baremetal.plugins.module_utils.firmware import secure_boot as sb
from tests.helpers import ROOT

HERE = os.path.join(os.path.dirname(__file__), "fixtures")
ENFORCING_BMC = {"path": "/redfish/v1/Systems/1/SecureBoot", "enable": True, "current_boot": "Enabled",
                 "mode": "DeployedMode"}
KERNEL_ON = "[    0.000000] secureboot: Secure boot enabled\n"
KERNEL_OFF = "[    0.000000] secureboot: Secure boot disabled\n"


def _vars(case):
    """{name: base64 content} as ansible.builtin.slurp returns the efivarfs files."""
    found = {}
    for name in sb.VARIABLES:
        with open(os.path.join(HERE, case, "%s-%s" % (name, sb.EFI_GLOBAL)), "rb") as handle:
            found[name] = base64.b64encode(handle.read()).decode()
    return found


def test_an_enforcing_boot_passes_when_the_bmc_agrees():
    got = sb.verdict(ENFORCING_BMC, "machine1", _vars("efivars-enforcing"), KERNEL_ON)
    assert got["passed"] and got["reasons"] == []
    assert got["node_state"] == {"SecureBoot": 1, "SetupMode": 0, "kernel": "enabled", "lockdown": None, "errors": []}
    assert "enforcing on machine1" in got["msg"]


def test_secure_boot_off_is_refused_naming_the_node_every_reason_and_the_fix():
    bmc = dict(ENFORCING_BMC, enable=False, current_boot="Disabled")
    got = sb.verdict(bmc, "machine1", _vars("efivars-off"), KERNEL_OFF)
    assert not got["passed"]
    assert got["reasons"] == [
        "BMC: the BMC reports SecureBootEnable=false",
        "BMC: the BMC reports SecureBootCurrentBoot=Disabled",
        "node: the firmware reports SecureBoot=0 (off)",
        "node: the firmware is in setup mode (SetupMode=1: no platform key, nothing is verified)",
        "node: the kernel says 'Secure boot disabled'"]
    assert got["msg"].startswith("Node machine1 is refused before it joins: Secure Boot is required")
    assert "gpufleet_secure_boot_required: false" in got["msg"] and "SecureBootEnable true" in got["msg"]


@pytest.mark.parametrize("bmc, reason", [
    (None, "offers no Redfish SecureBoot resource"),
    (dict(ENFORCING_BMC, mode="SetupMode"), "SecureBootMode=SetupMode (enforcing: UserMode or DeployedMode)"),
    (dict(ENFORCING_BMC, mode="AuditMode"), "SecureBootMode=AuditMode"),
    (dict(ENFORCING_BMC, mode=None), "SecureBootMode=null"),
    (dict(ENFORCING_BMC, enable=None), "SecureBootEnable=null"),
    (dict(ENFORCING_BMC, current_boot=None), "SecureBootCurrentBoot=null"),
])
def test_a_bmc_that_cannot_say_enforcing_is_a_refusal(bmc, reason):
    got = sb.verdict(bmc, "n1", _vars("efivars-enforcing"), KERNEL_ON)
    assert not got["passed"] and len(got["reasons"]) == 1 and reason in got["reasons"][0]


@pytest.mark.parametrize("change, kernel, reason", [
    ({"SecureBoot": None}, KERNEL_ON, "the efivar SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c is missing"),
    ({"SetupMode": None}, KERNEL_ON, "the efivar SetupMode-8be4df61-93ca-11d2-aa0d-00e098032b8c is missing"),
    ({"SecureBoot": base64.b64encode(b"\x06\x00\x00\x00").decode()}, KERNEL_ON, "has 4 bytes; expected 5"),
    ({"SecureBoot": "not base64!"}, KERNEL_ON, "is not base64"),
    ({"SetupMode": base64.b64encode(b"\x06\x00\x00\x00\x01").decode()}, KERNEL_ON, "in setup mode"),
    ({}, "", "has no 'Secure boot ...' line"),
    ({}, "secureboot: Secure boot could not be determined", "'Secure boot could not be determined'"),
])
def test_a_node_reading_that_is_not_enforcing_or_unreadable_is_a_refusal(change, kernel, reason):
    variables = dict(_vars("efivars-enforcing"), **change)
    got = sb.verdict(ENFORCING_BMC, "n1", variables, kernel)
    assert not got["passed"] and any(reason in r for r in got["reasons"]), got["reasons"]


def test_the_raw_efivar_bytes_are_read_too():
    assert sb.efivar_value(b"\x06\x00\x00\x00\x01", "SecureBoot") == 1
    with pytest.raises(sb.SecureBootError, match="SetupMode has 6 bytes"):
        sb.efivar_value(b"\x06\x00\x00\x00\x01\x00", "SetupMode")


def _playbook_efivar_paths():
    with open(os.path.join(ROOT, "playbooks", "tasks", "secure_boot.yml")) as handle:
        tasks = yaml.safe_load(handle)
    return [task["loop"] for task in tasks if "ansible.builtin.slurp" in task and "loop" in task][0]


def test_slurp_results_become_variables_and_a_failed_read_is_missing():
    # the playbook's loop reads exactly VARIABLES' efivarfs files, in order
    paths = _playbook_efivar_paths()
    assert paths == ["/sys/firmware/efi/efivars/%s-%s" % (name, sb.EFI_GLOBAL) for name in sb.VARIABLES]
    results = [{"item": paths[0], "content": "BgAAAAE=", "encoding": "base64"},
               {"item": paths[1], "failed": True, "msg": "file not found: " + paths[1]}]
    assert sb.slurped(results) == {"SecureBoot": "BgAAAAE=", "SetupMode": None}
    assert sb.slurped(None) == {"SecureBoot": None, "SetupMode": None}


def test_the_last_kernel_line_counts():
    state = sb.node_state(_vars("efivars-enforcing"), KERNEL_OFF + KERNEL_ON)
    assert state["kernel"] == "enabled"


def _console(case):
    with open(os.path.join(HERE, "console-%s.txt" % case)) as handle:
        return handle.read()


def test_the_installers_console_of_an_enforcing_boot_passes():
    console = _console("enforcing")
    assert sb.hex_variables(console) == {"SecureBoot": b"\x06\x00\x00\x00\x01", "SetupMode": b"\x06\x00\x00\x00\x00"}
    assert sb.hex_variables(console) == dict((k, base64.b64decode(v)) for k, v in _vars("efivars-enforcing").items())
    assert sb.verdict(ENFORCING_BMC, "machine1", sb.hex_variables(console), console)["passed"]


def test_the_installers_console_of_a_boot_with_secure_boot_off_is_refused():
    console = _console("off")
    got = sb.verdict(dict(ENFORCING_BMC, enable=False, current_boot="Disabled"), "machine1",
                     sb.hex_variables(console), console)
    assert not got["passed"] and "node: the firmware reports SecureBoot=0 (off)" in got["reasons"]
    assert "node: the kernel says 'Secure boot disabled'" in got["reasons"]


@pytest.mark.parametrize("text, expected", [
    ("secure boot: SecureBoot=missing SetupMode=0600000000", {"SecureBoot": None, "SetupMode": b"\x06\0\0\0\0"}),
    ("secure boot: SecureBoot=060000001 SetupMode=0600000000", {"SecureBoot": b"", "SetupMode": b"\x06\0\0\0\0"}),
    ("no such line", {"SecureBoot": None, "SetupMode": None}),
])
def test_a_console_line_with_a_missing_or_malformed_variable_reads_as_such(text, expected):
    assert sb.hex_variables(text) == expected
    assert not sb.verdict(ENFORCING_BMC, "n1", sb.hex_variables(text), KERNEL_ON)["passed"]


LOCKED = "none [integrity] confidentiality\n"
NOT_LOCKED = "[none] integrity confidentiality\n"
LONG_UP_LOG = "[864000.123456] eth0: link up\n"   # the boot line has left the ring buffer


@pytest.mark.parametrize("content, mode", [
    (LOCKED, "integrity"),
    (base64.b64encode(LOCKED.encode()).decode(), "integrity"),   # as slurp returns it
    ("none integrity [confidentiality]", "confidentiality"),
    (NOT_LOCKED, "none"),
    (None, None), ("", None), ("not base64 !", None), ("[none] [integrity]", None),
])
def test_the_lockdown_mode_is_the_one_selected(content, mode):
    assert sb.lockdown_mode(content) == mode


def test_a_long_up_node_whose_boot_line_rotated_out_passes_on_its_lockdown():
    got = sb.verdict(ENFORCING_BMC, "n1", _vars("efivars-enforcing"), LONG_UP_LOG,
                     base64.b64encode(LOCKED.encode()).decode())
    assert got["passed"], got["msg"]
    assert got["node_state"]["kernel"] is None and got["node_state"]["lockdown"] == "integrity"


@pytest.mark.parametrize("lockdown, shown", [(NOT_LOCKED, "is none"), (None, "is unreadable")])
def test_without_the_boot_line_a_kernel_not_locked_down_is_refused(lockdown, shown):
    got = sb.verdict(ENFORCING_BMC, "n1", _vars("efivars-enforcing"), LONG_UP_LOG, lockdown)
    assert not got["passed"]
    assert got["reasons"] == ["node: the kernel log of this boot has no 'Secure boot ...' line and the kernel's "
                              "lockdown (/sys/kernel/security/lockdown) %s, not integrity or confidentiality" % shown]


def test_the_boot_line_wins_over_the_lockdown():
    got = sb.verdict(ENFORCING_BMC, "n1", _vars("efivars-enforcing"), KERNEL_OFF, LOCKED)
    assert not got["passed"] and got["reasons"] == ["node: the kernel says 'Secure boot disabled'"]
