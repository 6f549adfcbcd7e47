# -*- coding: utf-8 -*-
# Copyright: gpufleet.baremetal contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The acceptance gate's fabric test sets of a run (playbooks/tasks/fabric_sets.yml).

- ``ansible_play_hosts_all | gpufleet.baremetal.fabric_sets(hostvars, ansible_play_hosts, size, peers)``:
  ``{validated, sets, not_run}``.
The logic is plugins/module_utils/gate/fabric_sets.py.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate import fabric_sets as sets


def fabric_sets(run_hosts, hostvars, play_hosts, size, peers=None):
    """``run_hosts``: every host of the play; ``play_hosts``: the ones Ansible still runs."""
    still = set(play_hosts or ())
    nodes = [sets.describe(host, hostvars[host], host in still) for host in run_hosts]
    offered = [{"node": p, "fabric_set": hostvars[p].get("gpufleet_fabric_set") or ""}
               for p in (peers or ()) if p in hostvars]
    return sets.cut(nodes, size, offered)


class FilterModule(object):
    def filters(self):
        return {"fabric_sets": fabric_sets}
