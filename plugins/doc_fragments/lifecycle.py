# -*- coding: utf-8 -*-
# Copyright: gpufleet.baremetal contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ledger option shared by the lifecycle modules.

Keep in step with plugins/module_utils/lifecycle/argspec.py (``ledger_argspec``).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    DOCUMENTATION = r"""
options:
  ledger:
    description:
      - Path of the SQLite ledger on the controller.
      - Falls back to the E(GPUFLEET_LEDGER) environment variable.
    type: path
    required: true
"""
