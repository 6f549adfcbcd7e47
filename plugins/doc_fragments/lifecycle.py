# -*- coding: utf-8 -*-
# Copyright: gpufleet.baremetal contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ledger options shared by the lifecycle modules.

Keep in step with plugins/module_utils/lifecycle/argspec.py (``ledger_argspec``).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    DOCUMENTATION = r"""
options:
  ledger:
    description:
      - Where the lifecycle ledger is. A file path on the controller selects SQLite (the
        embedded default; created with its schema when missing, except in check mode).
      - A C(postgresql://user@host:5432/dbname) URL selects PostgreSQL (needs the Python
        library C(psycopg) 3 on the controller or in the execution environment). Several
        controllers and AWX job slices can then share one ledger.
      - Put the password in O(ledger_password), E(PGPASSWORD) or C(~/.pgpass), not in the URL,
        because Ansible logs module arguments before the module can mask them. A password in
        the URL is masked in results and errors, and the module warns.
      - Falls back to the E(GPUFLEET_LEDGER) environment variable.
    type: str
    required: true
  ledger_password:
    description:
      - Password of the PostgreSQL role in O(ledger). Ignored for an SQLite ledger.
      - Falls back to the E(GPUFLEET_LEDGER_PASSWORD) environment variable.
    type: str
"""
