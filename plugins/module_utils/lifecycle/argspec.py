# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Options every lifecycle module shares (the ledger path and the operator)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import getpass
import socket

from ansible.module_utils.basic import env_fallback

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger

__all__ = ["ledger_argspec", "open_ledger", "operator"]


def ledger_argspec(**extra):
    """The ``ledger`` option (path; falls back to $GPUFLEET_LEDGER) plus ``extra``."""
    spec = {"ledger": {"type": "path", "required": True,
                       "fallback": (env_fallback, ["GPUFLEET_LEDGER"])}}
    spec.update(extra)
    return spec


def open_ledger(module):
    """The module's ledger; in check mode every write is rolled back."""
    return Ledger(module.params["ledger"], dry_run=module.check_mode)


def operator(module):
    """Who is acting: the ``who`` option, else user@host of the controller."""
    who = module.params.get("who")
    if who:
        return who
    try:
        return "%s@%s" % (getpass.getuser(), socket.gethostname())
    except (KeyError, OSError):
        return "ansible@%s" % socket.gethostname()
