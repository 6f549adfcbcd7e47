# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The system's UEFI Secure Boot state as its BMC reports it: ``Systems/<id>/SecureBoot``.

DMTF SecureBoot v1.0+: ``SecureBootEnable`` (the setting), ``SecureBootCurrentBoot`` (this
boot: Enabled/Disabled), ``SecureBootMode`` (SetupMode, UserMode, AuditMode, DeployedMode).
A system without the link, or a BMC answering 404/405/501, gives ``None`` (the part is not
offered; the join check refuses a node that requires Secure Boot then). A value outside the
schema is a named BmcResponseError. The decision is in module_utils/firmware/secure_boot.py.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import discovery
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.fields import Fields

__all__ = ["CURRENT_BOOT", "MODES", "secure_boot_facts", "parse_secure_boot"]

CURRENT_BOOT = ("Enabled", "Disabled")
MODES = ("SetupMode", "UserMode", "AuditMode", "DeployedMode")


def parse_secure_boot(resource, node="", where=None):
    """{path, enable, current_boot, mode} of a SecureBoot resource (absent fields are None)."""
    f = Fields(resource, node, where)
    return dict(path=where, enable=f.get("SecureBootEnable", "flag"),
                current_boot=f.text("SecureBootCurrentBoot", choices=CURRENT_BOOT),
                mode=f.text("SecureBootMode", choices=MODES))


def secure_boot_facts(client, system_path):
    """The system's SecureBoot facts, or None when the BMC does not offer them."""
    path = discovery.link(client.get(system_path), "SecureBoot", node=client.node)
    resource = discovery.optional(client, path)
    if resource is None:
        return None
    return parse_secure_boot(resource, client.node, path)
