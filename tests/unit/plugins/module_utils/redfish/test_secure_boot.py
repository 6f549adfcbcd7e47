"""redfish.secure_boot: the system's SecureBoot resource, from sushy-tools' libvirt driver (the lab
machine's BMC, fixtures/sushy/secure_boot-libvirt.json), the DMTF rackmount mockup, and a BMC that
lacks it or answers outside the schema."""
import copy
import json
import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import inventory
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import BmcResponseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.secure_boot import (
    parse_secure_boot, secure_boot_facts,
)

HERE = os.path.dirname(__file__)
SYSTEM = "/redfish/v1/Systems/1"


def _libvirt_answer():
    with open(os.path.join(HERE, "fixtures", "sushy", "secure_boot-libvirt.json")) as handle:
        return json.load(handle)


def _tree(rf, secure_boot):
    tree = rf.load_tree("sushy")
    if secure_boot is not None:
        tree[SYSTEM + "/SecureBoot"] = secure_boot
    return tree


def test_the_lab_bmc_reports_secure_boot_enforcing(rf):
    client = rf.make_client(rf.FakeTransport(_tree(rf, _libvirt_answer())))
    assert secure_boot_facts(client, SYSTEM) == {"path": SYSTEM + "/SecureBoot", "enable": True,
                                                 "current_boot": "Enabled", "mode": "DeployedMode"}


def test_the_rackmount_mockup_reports_it_off_in_user_mode(rf):
    tree = rf.load_mockup("public-rackmount1")
    system = tree["/redfish/v1/Systems"]["Members"][0]["@odata.id"]
    got = secure_boot_facts(rf.make_client(rf.FakeTransport(tree)), system)
    assert got == {"path": system + "/SecureBoot", "enable": False, "current_boot": "Disabled", "mode": "UserMode"}


def test_a_bmc_without_the_resource_gives_none_and_names_it_unsupported(rf):
    client = rf.make_client(rf.FakeTransport(_tree(rf, None)))   # linked, but answers 404
    facts = inventory.gather(client, None, ("system", "secure_boot"))
    assert facts["secure_boot"] is None and "secure_boot" in facts["unsupported"]
    tree = _tree(rf, None)
    del tree[SYSTEM]["SecureBoot"]                                   # not linked at all
    assert secure_boot_facts(rf.make_client(rf.FakeTransport(tree)), SYSTEM) is None


@pytest.mark.parametrize("field, value, word", [
    ("SecureBootEnable", "yes", "true or false"),
    ("SecureBootMode", "Enforcing", "SecureBootMode"),
    ("SecureBootCurrentBoot", 1, "SecureBootCurrentBoot"),
])
def test_a_value_outside_the_schema_is_a_named_error(field, value, word):
    answer = dict(_libvirt_answer(), **{field: value})
    with pytest.raises(BmcResponseError, match=word):
        parse_secure_boot(answer, "node-1", SYSTEM + "/SecureBoot")


def test_only_asked_for_it_is_read(rf):
    transport = rf.FakeTransport(_tree(rf, copy.deepcopy(_libvirt_answer())))
    facts = inventory.gather(rf.make_client(transport), None, ("system",))
    assert "secure_boot" not in facts
    assert "secure_boot" in inventory.CHOICES and "secure_boot" not in inventory.SUBSETS
