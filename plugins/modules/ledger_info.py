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
    full transition history, a gang with its members' states, the ledger's consistency
    problems, the capacity controller's latest decisions, a pool's demand history, who
    holds a lease and the image / gate-profile rollouts (C(gpufleet refresh)).
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
  check:
    description:
      - Also check the ledger's consistency (each node's transitions numbered 1..N with no
        gap, current state equal to the last transition, gang members that exist).
    type: bool
    default: false
  decisions:
    description: Also return the newest this many decisions of the capacity controller (0 for none).
    type: int
    default: 0
  demand_pool:
    description: Also return the per-minute demand history of this pool.
    type: str
  lease:
    description: Also return who holds this lease (for example C(capacity)) and until when.
    type: str
  rollouts:
    description: Also return the rollouts of this pool (C(gpufleet refresh)), oldest first.
    type: str
  enrollments:
    description:
      - Also return the current TPM attestation enrollment of each node read (C(gpufleet attest)),
        the AK bound to the node's EK certificate. A node never enrolled is absent.
    type: bool
    default: false
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

- name: Check the ledger and show the controller's last 20 decisions and the lease holder
  gpufleet.baremetal.ledger_info:
    ledger: postgresql://gpufleet@db.example.com/gpufleet
    check: true
    decisions: 20
    lease: capacity
  environment:
    GPUFLEET_LEDGER_PASSWORD: "{{ vault_gpufleet_ledger_password }}"
  register: gpufleet_audit

- name: Wait until the image rollout of pool gpu is finished
  gpufleet.baremetal.ledger_info:
    ledger: /var/lib/gpufleet/ledger.sqlite
    rollouts: gpu
  register: gpufleet_rollouts
  until: (gpufleet_rollouts.rollouts | last).phase in ['done', 'rolled_back']
  retries: 120
  delay: 60

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
  description: The gang with status, deadline, expired, members (node, source, state, reason),
    pool, wake and provision lists, and substitutions.
  returned: when O(gang_id) is set
  type: dict
problems:
  description: Consistency problems, each with C(object) and C(problem); empty when sound.
  returned: when O(check=true)
  type: list
  elements: dict
decisions:
  description:
    - Newest decisions, oldest first (id, at, controller, pool, action, nodes, job, reason,
      demand, supply, outcome, outcome_at; times in epoch seconds).
  returned: when O(decisions) > 0
  type: list
  elements: dict
demand:
  description: Demand rows of O(demand_pool) (pool, minute, gpus_running, gpus_pending, gpus_pending_capacity, recorded_at).
  returned: when O(demand_pool) is set
  type: list
  elements: dict
lease:
  description: The lease's name, holder and expires_at (epoch seconds); holder null when free or expired.
  returned: when O(lease) is set
  type: dict
rollouts:
  description:
    - Rollouts of O(rollouts), oldest first (id, pool, from_version, to_version,
      from_gate_profile, gate_profile, phase, canaries, reason, who, created_at, updated_at).
  returned: when O(rollouts) is set
  type: list
  elements: dict
enrollments:
  description:
    - The current enrollment of each node read that has one, by node (id, node, ek_fingerprint
      (SHA-256 of the EK certificate's DER), ak_pem, ak_name, enrolled_at, enrolled_by, reason).
      Nothing in it is secret.
  returned: when O(enrollments) is true
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import info
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.argspec import ledger_argspec, open_ledger


def main():
    module = AnsibleModule(
        argument_spec=ledger_argspec(
            nodes=dict(type="list", elements="str"),
            sku=dict(type="str"),
            history=dict(type="bool", default=False),
            gang_id=dict(type="str"),
            check=dict(type="bool", default=False),
            decisions=dict(type="int", default=0),
            demand_pool=dict(type="str"),
            lease=dict(type="str"),
            rollouts=dict(type="str"),
            enrollments=dict(type="bool", default=False),
        ),
        supports_check_mode=True)
    params = module.params
    try:
        book = open_ledger(module, read_only=True)
        result = info.read(book, **dict((k, params[k]) for k in (
            "nodes", "sku", "history", "gang_id", "check", "decisions", "demand_pool", "lease", "rollouts",
            "enrollments")))
    except GpufleetError as exc:
        module.fail_json(**exc.to_fail_kwargs())
    module.exit_json(**result)


if __name__ == "__main__":
    main()
