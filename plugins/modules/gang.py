#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.baremetal developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gang
short_description: Plan, admit or roll back an all-or-nothing gang of nodes
version_added: 0.1.0
description:
  - A gang is N nodes of one SKU wanted by a deadline. C(planned) reserves the fastest free
    nodes first (C(hot), then C(ready), then C(parked) to wake) and provisionable nodes
    (enrolled, inspected, recycling) for the rest, or fails naming what is short.
  - C(admitting) checks under the ledger's write lock that every member is C(ready) or C(hot) and the
    deadline holds, and locks the gang for admission; run the scheduler join after it.
  - C(admitted) records every member C(joined) in one transaction.
  - C(substituted) replaces member O(node) (failed the gate or missed its own deadline) with a
    spare of the same SKU in one transaction while the gang is planned and its deadline holds,
    taking O(spare) or else the fastest free node (hot, ready, parked, then provisionable). The replaced
    member keeps its record (status C(failed) or C(replaced), replaced by, reason).
  - C(rolled_back) admits nothing. Members named in O(node_reasons) or cut off in flight go to
    C(failed) with the reason; C(ready) members return to the warm pool; unstarted ones are released.
  - Every state is idempotent; repeating it returns the recorded outcome with C(changed=false).
author:
  - gpufleet.baremetal developers (@gpufleet)
attributes:
  check_mode:
    support: full
    description: The transaction runs and is rolled back, so the result is exact.
  diff_mode:
    support: full
    description: Shows the gang status and member states before and after.
extends_documentation_fragment:
  - gpufleet.baremetal.lifecycle
options:
  gang_id:
    description: Unique id of the gang request.
    type: str
    required: true
  state:
    description: The gang step to reach.
    type: str
    required: true
    choices: [admitted, admitting, planned, rolled_back, substituted]
  sku:
    description: SKU every member must have. Required with O(state=planned).
    type: str
  size:
    description: Number of nodes, N. Required with O(state=planned).
    type: int
  deadline_seconds:
    description: Seconds from planning until the gang must be admitted.
    type: int
    default: 3600
  candidates:
    description: Only consider these nodes (for example the hosts of the play). All ledger nodes of O(sku) when omitted.
    type: list
    elements: str
  reason:
    description: Why the gang is rolled back, or why O(node) is replaced. Required with
      O(state=rolled_back) and O(state=substituted).
    type: str
  node:
    description: The member to replace. Required with O(state=substituted).
    type: str
  spare:
    description: The node to put in its place. The fastest free node of the SKU when omitted.
    type: str
  node_reasons:
    description: Map of failed member to why it failed, recorded as its C(failed) reason.
    type: dict
    default: {}
  who:
    description: Who acts. Defaults to C(user@host) of the controller.
    type: str
  run_id:
    description: Id of the playbook run, recorded with each member transition.
    type: str
notes:
  - A member that is C(ready) but named in O(node_reasons) (for example its scheduler join
    failed) goes to C(recycling), since C(ready -> failed) is not an edge of the state machine.
seealso:
  - module: gpufleet.baremetal.node_state
  - module: gpufleet.baremetal.ledger_info
"""

EXAMPLES = r"""
- name: Reserve 8 lab nodes, warm pool first
  gpufleet.baremetal.gang:
    ledger: "{{ gpufleet_ledger }}"
    gang_id: train-42
    state: planned
    sku: lab
    size: 8
    deadline_seconds: 1800
    candidates: "{{ ansible_play_hosts_all }}"
  register: gpufleet_gang

- name: Lock the gang for admission (fails unless all 8 are ready)
  gpufleet.baremetal.gang:
    ledger: "{{ gpufleet_ledger }}"
    gang_id: train-42
    state: admitting

- name: Replace a member that failed the gate with a spare (while the deadline holds)
  gpufleet.baremetal.gang:
    ledger: "{{ gpufleet_ledger }}"
    gang_id: train-42
    state: substituted
    node: lab-r1-n3
    reason: "gate phase nvlink: bandwidth 310 GB/s < 400 GB/s"

- name: Roll back when a member failed
  gpufleet.baremetal.gang:
    ledger: "{{ gpufleet_ledger }}"
    gang_id: train-42
    state: rolled_back
    reason: lab-r1-n3 failed the acceptance gate
    node_reasons:
      lab-r1-n3: "gate phase nvlink: bandwidth 310 GB/s < 400 GB/s"
"""

RETURN = r"""
gang:
  description: The gang after the task.
  returned: always
  type: dict
  contains:
    gang_id:
      description: Gang id.
      type: str
    status:
      description: One of planned, admitting, admitted, rolled_back.
      type: str
    sku:
      description: SKU of the members.
      type: str
    size:
      description: Number of members.
      type: int
    deadline:
      description: Deadline as UTC ISO 8601.
      type: str
    expired:
      description: Whether a gang not yet admitted is past its deadline.
      type: bool
    seconds_left:
      description: Seconds until the deadline (negative when past).
      type: float
    reason:
      description: Why the gang was rolled back.
      type: str
    members:
      description: Each member with source (pool or provision), state and last reason.
      type: list
      elements: dict
    pool:
      description: Members taken hot or ready from the warm pool.
      type: list
      elements: str
    wake:
      description: Members taken parked (powered off) that must be woken.
      type: list
      elements: str
    substitutions:
      description: Members swapped out (node, source, status failed or replaced, replaced_by, reason, at).
      type: list
      elements: dict
    provision:
      description: Members that must be provisioned.
      type: list
      elements: str
    rollback:
      description: Per member state before and after the rollback (only when this task rolled back).
      type: list
      elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import gang
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.argspec import (
    ledger_argspec, open_ledger, operator)


def _run(module, book):
    p = module.params
    if p["state"] == "planned":
        return gang.plan(book, p["gang_id"], p["sku"], p["size"], p["deadline_seconds"], p["candidates"])
    if p["state"] == "admitting":
        return gang.admitting(book, p["gang_id"])
    if p["state"] == "admitted":
        return gang.admitted(book, p["gang_id"], operator(module), p["run_id"])
    if p["state"] == "substituted":
        return gang.substitute(book, p["gang_id"], p["node"], p["reason"], operator(module),
                               spare=p["spare"], candidates=p["candidates"], run_id=p["run_id"])
    return gang.rollback(book, p["gang_id"], p["reason"], operator(module), p["node_reasons"], p["run_id"])


def _snapshot(book, gang_id):
    try:
        found = gang.status(book, gang_id)
    except GpufleetError:
        return {}
    return {"status": found["status"], "members": dict((m["node"], m["state"]) for m in found["members"])}


def main():
    module = AnsibleModule(
        argument_spec=ledger_argspec(
            gang_id=dict(type="str", required=True),
            state=dict(type="str", required=True,
                       choices=["admitted", "admitting", "planned", "rolled_back", "substituted"]),
            sku=dict(type="str"),
            size=dict(type="int"),
            deadline_seconds=dict(type="int", default=3600),
            candidates=dict(type="list", elements="str"),
            reason=dict(type="str"),
            node_reasons=dict(type="dict", default={}),
            node=dict(type="str"),
            spare=dict(type="str"),
            who=dict(type="str"),
            run_id=dict(type="str"),
        ),
        required_if=[("state", "planned", ("sku", "size")), ("state", "rolled_back", ("reason",)),
                     ("state", "substituted", ("node", "reason"))],
        supports_check_mode=True)
    try:
        book = open_ledger(module)
        before = _snapshot(book, module.params["gang_id"])
        result, changed = _run(module, book)
    except GpufleetError as exc:
        module.fail_json(**exc.to_fail_kwargs())
    after = {"status": result["status"], "members": dict((m["node"], m["state"]) for m in result["members"])}
    output = {"changed": changed, "gang": result}
    if module._diff:
        output["diff"] = {"before": before, "after": after}
    module.exit_json(**output)


if __name__ == "__main__":
    main()
