#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.baremetal contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: redfish_power
short_description: Power servers on, off, restart or cycle through their Redfish BMC
version_added: 0.1.0
description:
  - Brings one system (O(baseuri)) or many (O(nodes), concurrently) to a power state through
    C(ComputerSystem.Reset), then waits until the BMC reports the target state.
  - Checks the reset types the BMC allows before sending anything and fails with the
    allowed list when the needed one is missing.
  - V(on) and V(off) are idempotent; V(restart), V(force_restart) and V(power_cycle) always act.
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
  state:
    description:
      - V(on) powers on (C(On), else C(ForceOn)).
      - V(off) shuts down gracefully (C(GracefulShutdown)) and forces it off (C(ForceOff)) when
        the system is still on after O(graceful_timeout) seconds.
      - V(force_off) powers off at once (C(ForceOff)).
      - V(restart) restarts gracefully (C(GracefulRestart), else C(ForceRestart)); an off
        system is powered on.
      - V(force_restart) sends C(ForceRestart); V(power_cycle) sends C(PowerCycle).
    type: str
    required: true
    choices: ["on", "off", force_off, restart, force_restart, power_cycle]
  wait:
    description: Wait until the BMC reports the target power state.
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait for the target power state before failing the node.
    type: int
    default: 300
  graceful_timeout:
    description: Seconds V(off) waits for a graceful shutdown before forcing the power off.
    type: int
    default: 60
  poll_interval:
    description: Seconds between two power state reads while waiting.
    type: float
    default: 2.0
notes:
  - sushy-tools' fake driver does not offer C(PowerCycle); the gpufleet lab BMC layer adds it.
"""

EXAMPLES = r"""
- name: Power on one server and wait until it is on
  gpufleet.baremetal.redfish_power:
    baseuri: bmc-r12-07.example.net
    username: "{{ bmc_user }}"
    password: "{{ bmc_password }}"
    state: "on"
  delegate_to: localhost

- name: Power-cycle a whole rack in one task, tolerating 2% dead BMCs
  gpufleet.baremetal.redfish_power:
    nodes: "{{ rack42_bmcs }}"   # [{name: n001, baseuri: 10.42.0.1, system_id: "1"}, ...]
    username: "{{ bmc_user }}"
    password: "{{ bmc_password }}"
    ca_path: /etc/gpufleet/bmc-ca.pem
    state: power_cycle
    workers: 100
    max_failed_percent: 2
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
changed:
  description: Whether any node's power state was (or in check mode would be) changed.
  returned: always
  type: bool
state:
  description: Power state the BMC reports at the end (single node, O(baseuri) only).
  returned: when O(baseuri) is used and the node succeeded
  type: str
  sample: "On"
before:
  description: Power state before the task (single node only).
  returned: when O(baseuri) is used and the node succeeded
  type: str
  sample: "Off"
reset_type:
  description: Reset type sent (or that would be sent), null when nothing was sent.
  returned: when O(baseuri) is used and the node succeeded
  type: str
  sample: "On"
nodes:
  description: One entry per node, in input order.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Node name.
      type: str
    changed:
      description: Whether this node changed.
      type: bool
    failed:
      description: Whether this node failed.
      type: bool
    error:
      description: Why this node failed (node, BMC, cause, fix), else null.
      type: str
    state:
      description: Power state at the end.
      type: str
    before:
      description: Power state before.
      type: str
    reset_type:
      description: Reset type sent.
      type: str
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
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.fanout import run_module
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.power import STATES, set_power


def main():
    module = AnsibleModule(**module_kwargs(
        state=dict(type="str", required=True, choices=sorted(STATES)),
        wait=dict(type="bool", default=True),
        wait_timeout=dict(type="int", default=300),
        graceful_timeout=dict(type="int", default=60),
        poll_interval=dict(type="float", default=2.0),
    ))
    p = module.params

    def operation(client, node):
        return set_power(client, node["system_id"], p["state"], check_mode=module.check_mode,
                         wait=p["wait"], timeout=p["wait_timeout"],
                         graceful_timeout=p["graceful_timeout"], poll=p["poll_interval"])

    run_module(module, operation, diff_of=lambda e: (e.get("before"), e.get("state")))


if __name__ == "__main__":
    main()
