# -*- coding: utf-8 -*-
# Copyright: gpufleet.baremetal contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that turn a failed task into the reason the ledger records (playbooks/tasks/record_failure.yml).

- ``ansible_failed_result | gpufleet.baremetal.answer_unknown``: the result does not say whether the
  node went away; ask the node (a short ``wait_for_connection``, registered as the probe).
- ``ansible_failed_result | gpufleet.baremetal.connection_lost(probe)``: the node stopped answering.
- ``ansible_failed_result | gpufleet.baremetal.failure_reason(task, node, state, power, probe)``: the reason.
- ``node | gpufleet.baremetal.lost_node_reason(state, power, context)``: a node that left the
  play unreachable (no task result to read).
The logic is plugins/module_utils/lifecycle/failure_reason.py.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import failure_reason as reasons


class FilterModule(object):
    def filters(self):
        return {
            "answer_unknown": reasons.answer_unknown,
            "connection_lost": reasons.connection_lost,
            "failure_reason": reasons.failure_reason,
            "lost_node_reason": reasons.lost_node_reason,
        }
