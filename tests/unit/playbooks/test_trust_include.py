"""The trust checks (tasks/trust.yml: Secure Boot, attestation) run before a node's gate, inside the
provisioning rescue, so a refused node is recorded failed from validating and never reaches ready;
each only for nodes that require it (attestation is off by default, so existing inventories are
unchanged)."""
import os

import yaml

from tests.helpers import ROOT


def _load(*path):
    with open(os.path.join(ROOT, *path)) as handle:
        return yaml.safe_load(handle)


def _tasks(name):
    return _load("playbooks", "tasks", name)


def _included(tasks):
    return [t.get("ansible.builtin.include_tasks") or t.get("ansible.builtin.include_role", {}).get("name")
            for t in tasks]


def test_each_trust_check_runs_only_when_required():
    tasks = dict(zip(_included(_tasks("trust.yml")), _tasks("trust.yml")))
    assert tasks["attest.yml"]["when"] == "gpufleet_attestation_required | default(false) | bool"
    assert tasks["secure_boot.yml"]["when"] == \
        "gpufleet_secure_boot_required | default(gpufleet_installer_url is defined) | bool"


def test_the_trust_checks_run_before_the_gate_wherever_a_node_is_gated():
    provision = _included(_tasks("provision.yml"))
    assert provision.index("trust.yml") < provision.index("gate.yml")
    wake = [t for t in _load("playbooks", "wake.yml")[-1]["tasks"] if "block" in t and "rescue" in t]
    assert len(wake) == 1
    steps = _included(wake[0]["block"])
    assert steps.index("tasks/trust.yml") < steps.index("tasks/gate.yml")
    golden = [t for t in _load("lab", "playbooks", "machine_golden.yml")[-1]["tasks"] if "block" in t]
    steps = _included(golden[0]["block"])
    assert steps.index("../../playbooks/tasks/trust.yml") < steps.index("../../playbooks/tasks/gate.yml")


def test_the_join_no_longer_checks_a_node_that_is_already_ready():
    # ready -> failed is not a transition: a refusal at join would leave the node recorded ready
    assert not {"trust.yml", "secure_boot.yml", "attest.yml"} & set(_included(_tasks("join.yml")))


def test_every_tpm_step_runs_against_the_configured_tcti_and_nothing_runs_in_check_mode():
    attest = [t for t in _tasks("attest.yml") if "block" in t]
    assert len(attest) == 1 and attest[0]["when"] == "not ansible_check_mode"
    assert attest[0]["environment"] == {"TPM2TOOLS_TCTI": "{{ gpufleet_tpm_tcti | default('device:/dev/tpmrm0') }}"}
