# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Options every lifecycle module shares (the ledger and the operator).

Keep in step with plugins/doc_fragments/lifecycle.py.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import getpass
import os
import socket

from ansible.module_utils.basic import env_fallback

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import ledger_location
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger

__all__ = ["ledger_argspec", "open_ledger", "operator"]


def ledger_argspec(**extra):
    """``ledger`` (file path or postgresql:// URL; $GPUFLEET_LEDGER) and its password, plus ``extra``."""
    spec = {
        # str, not path: Ansible's path expansion would mangle a URL whose password holds a "$".
        "ledger": {"type": "str", "required": True, "fallback": (env_fallback, ["GPUFLEET_LEDGER"])},
        "ledger_password": {"type": "str", "no_log": True,
                            "fallback": (env_fallback, ["GPUFLEET_LEDGER_PASSWORD"])},
    }
    spec.update(extra)
    return spec


def open_ledger(module, read_only=False):
    """The module's ledger; in check mode (and for ``read_only`` modules) nothing is written.

    A password inside the URL is added to the module's no-log values so it is masked in
    every result and error; the module warns, because Ansible logs the arguments to the
    system log before any module code runs.
    """
    location = module.params["ledger"]
    for secret in ledger_location.secrets_of(location):
        module.no_log_values.add(secret)
    if ledger_location.password_of(location):
        module.warn("The ledger URL carries a password. Ansible records module arguments in the "
                    "controller's system log before the module can mask them: put the password in "
                    "ledger_password (or GPUFLEET_LEDGER_PASSWORD, PGPASSWORD, ~/.pgpass) instead.")
    if read_only and not ledger_location.is_postgres(location) \
            and not os.path.isfile(ledger_location.expand(location)):
        raise LedgerError("No lifecycle ledger at %s. Run playbooks/enroll.yml first or pass the "
                          "right ledger path." % location, ledger=location)
    # A reader opens an SQLite file read-only: it needs no write access to the file or folder.
    return Ledger(location, dry_run=module.check_mode, read_only=read_only,
                  password=module.params.get("ledger_password"))


def operator(module):
    """Who is acting: the ``who`` option, else user@host of the controller."""
    who = module.params.get("who")
    if who:
        return who
    try:
        return "%s@%s" % (getpass.getuser(), socket.gethostname())
    except (KeyError, OSError):
        return "ansible@%s" % socket.gethostname()
