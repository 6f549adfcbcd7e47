#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.baremetal developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: node_state
short_description: Move nodes through the lifecycle state machine and record it in the ledger
version_added: 0.1.0
description:
  - Records a lifecycle transition (for example C(imaging -> configuring)) for one or many
    nodes in the controller's crash-safe ledger (an SQLite file or a PostgreSQL database),
    with who, when, why, image version and gate report id.
  - Refuses a transition that is not an edge of the state machine, naming the states the
    node may move to. With several nodes, one illegal transition refuses the whole batch.
  - Asking for the state a node is already in changes nothing, so a re-run after a crash
    converges without a duplicated record.
  - Runs on the controller; use C(delegate_to=localhost) in a play over nodes.
author:
  - gpufleet.baremetal developers (@gpufleet)
attributes:
  check_mode:
    support: full
    description: The transaction runs and is rolled back, so the result is exact.
  diff_mode:
    support: full
    description: Shows each node's state before and after.
extends_documentation_fragment:
  - gpufleet.baremetal.lifecycle
options:
  node:
    description: Name of one node (the inventory hostname). Mutually exclusive with O(nodes).
    type: str
  nodes:
    description: Names of several nodes, recorded in one transaction. Mutually exclusive with O(node).
    type: list
    elements: str
  state:
    description: The lifecycle state to move to.
    type: str
    required: true
    choices: [break_fix, configuring, decommissioned, draining, enrolled, failed, hot, imaging,
              inspected, joined, parked, ready, recycling, validating, waking]
  reason:
    description: Why the node moves (recorded with the transition; required for the audit trail).
    type: str
    required: true
  who:
    description: Who acts. Defaults to C(user@host) of the controller.
    type: str
  image_version:
    description: Image version the node runs or is being imaged with. Kept until changed.
    type: str
  gate_report_id:
    description: Id of the acceptance gate report behind this transition. Kept until changed.
    type: str
  sku:
    description: Hardware SKU of the node (set at enrollment; gangs and the warm pool select by it).
    type: str
  run_id:
    description: Id of the playbook run, to group the transitions of one run.
    type: str
  skip_if_past:
    description:
      - Leave a node alone when it is already further along the bring-up path than O(state)
        (for example recorded as C(configuring) when asked for C(imaging)).
      - Playbooks use it to resume after a crash without repeating finished steps.
    type: bool
    default: false
notes:
  - Writers serialise on the ledger's write lock (SQLite C(BEGIN IMMEDIATE) in WAL mode;
    PostgreSQL a transaction-level advisory lock), so parallel forks, AWX job slices and
    several controllers record safely into one ledger.
  - Check mode writes nothing at all; a missing ledger file or directory is not created.
seealso:
  - module: gpufleet.baremetal.ledger_info
  - module: gpufleet.baremetal.gang
"""

EXAMPLES = r"""
- name: Record that imaging started
  gpufleet.baremetal.node_state:
    ledger: /var/lib/gpufleet/ledger.sqlite
    node: "{{ inventory_hostname }}"
    state: imaging
    reason: virtual media inserted with image 2026.06.2
    image_version: "2026.06.2"
    skip_if_past: true
  delegate_to: localhost
  register: gpufleet_step

- name: Image the node only when it was not already past imaging
  ansible.builtin.debug:
    msg: imaging now
  when: gpufleet_step.state == 'imaging'

- name: Enroll a whole rack in one transaction
  gpufleet.baremetal.node_state:
    ledger: /var/lib/gpufleet/ledger.sqlite
    nodes: "{{ groups['rack42'] }}"
    state: enrolled
    reason: rack 42 delivered
    sku: h100-sxm-8x
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
state:
  description: State of the node after the task (only with O(node)).
  returned: when O(node) is used
  type: str
  sample: imaging
before:
  description: State of the node before the task; null when it was not in the ledger (only with O(node)).
  returned: when O(node) is used
  type: str
  sample: inspected
skipped_past:
  description: True when the node was further along and left alone (only with O(node)).
  returned: when O(node) is used
  type: bool
  sample: false
nodes:
  description: One entry per node.
  returned: always
  type: list
  elements: dict
  contains:
    node:
      description: Node name.
      type: str
    before:
      description: State before the task.
      type: str
    after:
      description: State after the task.
      type: str
    changed:
      description: Whether a transition was recorded.
      type: bool
    skipped_past:
      description: Whether the node was left alone because it is further along.
      type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.argspec import (
    ledger_argspec, open_ledger, operator)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.record import record_transition


def main():
    argument_spec = ledger_argspec(
        node=dict(type="str"),
        nodes=dict(type="list", elements="str"),
        state=dict(type="str", required=True, choices=list(states.STATES)),
        reason=dict(type="str", required=True),
        who=dict(type="str"),
        image_version=dict(type="str"),
        gate_report_id=dict(type="str"),
        sku=dict(type="str"),
        run_id=dict(type="str"),
        skip_if_past=dict(type="bool", default=False),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True,
                           mutually_exclusive=[("node", "nodes")],
                           required_one_of=[("node", "nodes")])
    params = module.params
    names = [params["node"]] if params["node"] else params["nodes"]
    try:
        result = record_transition(
            open_ledger(module), names, params["state"], operator(module), params["reason"],
            image_version=params["image_version"], gate_report_id=params["gate_report_id"],
            sku=params["sku"], run_id=params["run_id"], skip_if_past=params["skip_if_past"])
    except GpufleetError as exc:
        module.fail_json(**exc.to_fail_kwargs())
    if not module._diff:
        result.pop("diff")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
