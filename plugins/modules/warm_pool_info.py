#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.baremetal developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: warm_pool_info
short_description: Compute which nodes to provision to keep a warm pool of validated nodes
version_added: 0.1.0
description:
  - Compares a warm-pool policy (per SKU and tier, keep at least C(min_ready) validated nodes,
    at most C(max_ready)) with the ledger and returns, per policy entry, the ready nodes, the
    nodes in flight, the deficit, the nodes to provision now, the shortfall and the surplus.
  - Read-only. Feed RV(plans[].provision) to C(playbooks/bringup.yml) to refill the pool.
author:
  - gpufleet.baremetal developers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.baremetal.lifecycle
  - gpufleet.baremetal.attributes
  - gpufleet.baremetal.attributes.INFO_MODULE
options:
  policy:
    description: Policy entries, one per SKU and tier.
    type: list
    elements: dict
    required: true
    suboptions:
      sku:
        description: SKU the entry applies to.
        type: str
        required: true
      tier:
        description: Tier name; nodes are matched by O(node_tiers).
        type: str
        default: default
      min_ready:
        description: Validated nodes to keep ready.
        type: int
        required: true
      max_ready:
        description: Ready nodes above this count are reported as surplus. Defaults to O(policy[].min_ready).
        type: int
  node_tiers:
    description: Map of node name to tier (for example from the inventory); unmapped nodes are in tier C(default).
    type: dict
    default: {}
notes:
  - Nodes held by a gang do not count toward the pool. Nodes in flight (imaging, configuring,
    validating) count, so a refill is not started twice.
"""

EXAMPLES = r"""
- name: Keep four H100 nodes ready
  gpufleet.baremetal.warm_pool_info:
    ledger: "{{ gpufleet_ledger }}"
    policy:
      - sku: h100-sxm-8x
        min_ready: 4
        max_ready: 8
  register: gpufleet_pool

- name: Show what to provision
  ansible.builtin.debug:
    msg: "{{ gpufleet_pool.plans[0].provision }}"
"""

RETURN = r"""
plans:
  description: One plan per policy entry.
  returned: always
  type: list
  elements: dict
  contains:
    sku:
      description: SKU.
      type: str
    tier:
      description: Tier.
      type: str
    min_ready:
      description: Target of ready nodes.
      type: int
    max_ready:
      description: Ceiling of ready nodes.
      type: int
    ready:
      description: Free validated nodes (ready or hot).
      type: list
      elements: str
    in_flight:
      description: Free nodes being provisioned.
      type: list
      elements: str
    deficit:
      description: Nodes missing to reach min_ready.
      type: int
    provision:
      description: Provisionable nodes to start now.
      type: list
      elements: str
    shortfall:
      description: Deficit that no provisionable node can cover.
      type: int
    surplus:
      description: Ready nodes above max_ready.
      type: int
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import warm_pool
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.argspec import ledger_argspec, open_ledger


def main():
    module = AnsibleModule(
        argument_spec=ledger_argspec(
            policy=dict(type="list", elements="dict", required=True, options=dict(
                sku=dict(type="str", required=True),
                tier=dict(type="str", default="default"),
                min_ready=dict(type="int", required=True),
                max_ready=dict(type="int"),
            )),
            node_tiers=dict(type="dict", default={}),
        ),
        supports_check_mode=True)
    params = module.params
    policy = [dict((k, v) for k, v in entry.items() if v is not None) for entry in params["policy"]]
    try:
        records = open_ledger(module, read_only=True).nodes()
        for record in records:
            record["tier"] = params["node_tiers"].get(record["node"], "default")
        plans = warm_pool.plan_refill(policy, records)
    except GpufleetError as exc:
        module.fail_json(**exc.to_fail_kwargs())
    module.exit_json(changed=False, plans=plans)


if __name__ == "__main__":
    main()
