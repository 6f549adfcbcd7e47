#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.baremetal developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: ledger_info
short_description: Read node states, transition history and gangs from the lifecycle ledger
version_added: 0.1.0
description:
  - Returns the current lifecycle record of every node (or a selection), optionally the
    full transition history, and a gang with its members' states.
  - Read-only; never creates or changes a record.
author:
  - gpufleet.baremetal developers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.baremetal.lifecycle
  - gpufleet.baremetal.attributes
  - gpufleet.baremetal.attributes.INFO_MODULE
options:
  nodes:
    description: Only these nodes. All nodes when omitted.
    type: list
    elements: str
  sku:
    description: Only nodes of this SKU.
    type: str
  history:
    description: Also return every transition of the selected nodes, oldest first.
    type: bool
    default: false
  gang_id:
    description: Also return this gang (status, deadline, members and their states).
    type: str
notes:
  - A missing SQLite ledger file is an error (nothing was ever recorded there); nothing is created.
seealso:
  - module: gpufleet.baremetal.node_state
"""

EXAMPLES = r"""
- name: Read the ledger with history
  gpufleet.baremetal.ledger_info:
    ledger: /var/lib/gpufleet/ledger.sqlite
    history: true
  register: gpufleet_ledger

- name: Show nodes that failed
  ansible.builtin.debug:
    msg: "{{ gpufleet_ledger.nodes | selectattr('state', 'equalto', 'failed') | map(attribute='node') }}"
"""

RETURN = r"""
nodes:
  description: Current record of each selected node, sorted by name.
  returned: always
  type: list
  elements: dict
  sample:
    - {node: lab-r1-n1, state: ready, seq: 6, sku: lab, image_version: lab-2026.06.0,
       gate_report_id: lab-r1-n1-20260601T000000Z, reason: gate passed, gang_id: null,
       updated_at: "2026-06-01T00:00:00.000000Z"}
states:
  description: Map of node name to current state.
  returned: always
  type: dict
  sample: {lab-r1-n1: ready}
history:
  description:
    - Transitions of the selected nodes, oldest first (id, node, seq, from_state, to_state,
      at, who, why, image_version, gate_report_id, run_id, gang_id).
  returned: when O(history=true)
  type: list
  elements: dict
gang:
  description: The gang with status, deadline, expired, members (node, source, state, reason), pool and provision lists.
  returned: when O(gang_id) is set
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import gang
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.argspec import ledger_argspec, open_ledger


def main():
    module = AnsibleModule(
        argument_spec=ledger_argspec(
            nodes=dict(type="list", elements="str"),
            sku=dict(type="str"),
            history=dict(type="bool", default=False),
            gang_id=dict(type="str"),
        ),
        supports_check_mode=True)
    params = module.params
    try:
        book = open_ledger(module, read_only=True)
        wanted = set(params["nodes"]) if params["nodes"] is not None else None
        records = [r for r in book.nodes(sku=params["sku"]) if wanted is None or r["node"] in wanted]
        result = {"changed": False, "nodes": records,
                  "states": dict((r["node"], r["state"]) for r in records)}
        if params["history"]:
            names = set(r["node"] for r in records)
            result["history"] = [h for h in book.history() if h["node"] in names]
        if params["gang_id"]:
            result["gang"] = gang.status(book, params["gang_id"])
    except GpufleetError as exc:
        module.fail_json(**exc.to_fail_kwargs())
    module.exit_json(**result)


if __name__ == "__main__":
    main()
