"""The filter playbooks/tasks/secure_boot.yml decides with, through Ansible's templating, on slurp
results as the task registers them."""
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.gpufleet.baremetal.plugins.filter.secure_boot import FilterModule

PATH = "/sys/firmware/efi/efivars/%s-8be4df61-93ca-11d2-aa0d-00e098032b8c"
BMC = {"path": "/redfish/v1/Systems/1/SecureBoot", "enable": True, "current_boot": "Enabled", "mode": "DeployedMode"}
EXPR = "{{ bmc | gpufleet.baremetal.secure_boot_verdict('machine1', vars.results, log) }}"


def _render(**variables):
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(EXPR))


def _slurp(secure_boot, setup_mode):
    return {"results": [{"item": PATH % "SecureBoot", "content": secure_boot, "encoding": "base64"},
                        {"item": PATH % "SetupMode", "content": setup_mode, "encoding": "base64"}]}


def test_the_collection_offers_the_filter():
    assert sorted(FilterModule().filters()) == ["secure_boot_verdict"]


def test_an_enforcing_node_passes():
    got = _render(bmc=BMC, vars=_slurp("BgAAAAE=", "BgAAAAA="), log="secureboot: Secure boot enabled")
    assert got["passed"] is True, got["msg"]


def test_a_node_without_efivars_is_refused_with_the_reason():
    missing = {"results": [{"item": PATH % name, "failed": True, "msg": "file not found"}
                           for name in ("SecureBoot", "SetupMode")]}
    got = _render(bmc=None, vars=missing, log="")
    assert got["passed"] is False
    assert got["msg"].startswith("Node machine1 is refused before it joins")
    assert "offers no Redfish SecureBoot resource" in got["msg"] and "SecureBoot-8be4df61" in got["msg"]


LONG_EXPR = "{{ bmc | gpufleet.baremetal.secure_boot_verdict('machine1', vars.results, log, lockdown) }}"


def test_a_long_up_node_passes_on_its_slurped_lockdown_and_a_failed_read_refuses():
    common = dict(bmc=BMC, vars=_slurp("BgAAAAE=", "BgAAAAA="), log="[864000.1] eth0: link up")
    render = lambda **v: Templar(loader=DataLoader(), variables=dict(common, **v)).template(trust_as_template(LONG_EXPR))
    locked = {"content": "bm9uZSBbaW50ZWdyaXR5XSBjb25maWRlbnRpYWxpdHkK", "encoding": "base64"}
    assert render(lockdown=locked)["passed"] is True
    got = render(lockdown={"failed": True, "msg": "file not found: /sys/kernel/security/lockdown"})
    assert got["passed"] is False and "lockdown (/sys/kernel/security/lockdown) is unreadable" in got["msg"]
