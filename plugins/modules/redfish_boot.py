#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.baremetal contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: redfish_boot
short_description: Set the boot source override of servers through their Redfish BMC
version_added: 0.1.0
description:
  - Sets C(Boot.BootSourceOverrideTarget), C(BootSourceOverrideEnabled) and optionally
    C(BootSourceOverrideMode) on one system (O(baseuri)) or many (O(nodes), concurrently).
  - Checks the BMC's allowed values first and fails with the allowed list.
  - Reads the system back after the change and reports what the BMC actually applied
    (RV(applied)); a difference from the request is reported as a warning.
  - Idempotent, nothing is sent when the BMC already shows the requested values.
author:
  - gpufleet.baremetal maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.baremetal.redfish
  - gpufleet.baremetal.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  target:
    description:
      - Boot device for the override. V(none) clears the override target.
      - On Supermicro X11/X12, V(cd) is sent as C(UsbCd) when the BMC allows it (its virtual
        media is a USB CD).
    type: str
    required: true
    choices: [pxe, cd, hdd, uefi_http, bios_setup, none]
  enabled:
    description: V(once) for the next boot only, V(continuous) until changed, V(disabled).
    type: str
    default: once
    choices: [once, continuous, disabled]
  mode:
    description: Boot mode to set with the override; unchanged when not given.
    type: str
    choices: [uefi, legacy]
notes:
  - sushy-tools' fake driver reads a one-time override back as C(Continuous); the gpufleet
    lab BMC layer reports C(Once) as a real BMC does.
"""

EXAMPLES = r"""
- name: PXE boot once on the next power on
  gpufleet.baremetal.redfish_boot:
    baseuri: bmc-r12-07.example.net
    username: "{{ bmc_user }}"
    password: "{{ bmc_password }}"
    target: pxe
    enabled: once
    mode: uefi
  delegate_to: localhost

- name: Boot a rack from virtual CD once
  gpufleet.baremetal.redfish_boot:
    nodes: "{{ rack42_bmcs }}"
    username: "{{ bmc_user }}"
    password: "{{ bmc_password }}"
    target: cd
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
changed:
  description: Whether any node's boot override was (or would be) changed.
  returned: always
  type: bool
before:
  description: Boot override before (single node only).
  returned: when O(baseuri) is used and the node succeeded
  type: dict
  sample: {"target": "Hdd", "enabled": "Disabled", "mode": "UEFI"}
requested:
  description: Values requested, in the BMC's spelling (single node only).
  returned: when O(baseuri) is used and the node succeeded
  type: dict
  sample: {"target": "Pxe", "enabled": "Once", "mode": "UEFI"}
applied:
  description: Values the BMC reports after the change (single node only).
  returned: when O(baseuri) is used and the node succeeded
  type: dict
  sample: {"target": "Pxe", "enabled": "Once", "mode": "UEFI"}
nodes:
  description: One entry per node with C(name), C(changed), C(failed), C(error), C(before),
    C(requested) and C(applied).
  returned: always
  type: list
  elements: dict
failed_nodes:
  description: Names of the nodes that failed.
  returned: always
  type: list
  elements: str
summary:
  description: Counts of nodes in total, changed and failed.
  returned: always
  type: dict
  sample: {"total": 8, "changed": 8, "failed": 0}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.argspec import module_kwargs
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.boot import (
    ENABLED, MODES, TARGETS, set_boot,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.fanout import run_module


def main():
    module = AnsibleModule(**module_kwargs(
        target=dict(type="str", required=True, choices=sorted(TARGETS)),
        enabled=dict(type="str", default="once", choices=sorted(ENABLED)),
        mode=dict(type="str", choices=sorted(MODES)),
    ))
    p = module.params

    def operation(client, node):
        return set_boot(client, node["system_id"], p["target"], enabled=p["enabled"],
                        mode=p["mode"], check_mode=module.check_mode)

    run_module(module, operation, diff_of=lambda e: (e.get("before"), e.get("applied")))


if __name__ == "__main__":
    main()
