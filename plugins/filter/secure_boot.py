# -*- coding: utf-8 -*-
# Copyright: gpufleet.baremetal contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``bmc_facts | gpufleet.baremetal.secure_boot_verdict(node, slurp_results, kernel_log, lockdown)``:
whether a node that requires Secure Boot may join (playbooks/tasks/secure_boot.yml).
The logic is plugins/module_utils/firmware/secure_boot.py.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.firmware import secure_boot


def secure_boot_verdict(bmc_facts, node, slurp_results, kernel_log, lockdown=None):
    """``lockdown``: ``ansible.builtin.slurp``'s result for /sys/kernel/security/lockdown (or None)."""
    content = None
    if isinstance(lockdown, dict) and not lockdown.get("failed"):
        content = lockdown.get("content")
    return secure_boot.verdict(bmc_facts, node, secure_boot.slurped(slurp_results), kernel_log, content)


class FilterModule(object):
    def filters(self):
        return {"secure_boot_verdict": secure_boot_verdict}
