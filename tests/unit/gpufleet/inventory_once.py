"""The shipped inventories read by ``ansible-inventory`` once per test process, for command tests.

``gpufleet.controller.inventory.load_inventory`` runs ``ansible-inventory -i FILE --list`` on
every call (over a second on a loaded CI machine). The files under inventories/ do not change
during a run, so with the ``shipped_inventory_once`` fixture (autouse where imported) the first
call of each command line and Ansible environment really runs it and later calls get its output;
any other inventory, and any failed run, goes to the real command every time.
tests/unit/gpufleet/commands/test_controller.py does not use it: it spawns the real command.
"""
import os

import pytest

from gpufleet.controller import inventory
from tests.helpers import ROOT

SHIPPED = os.path.join(ROOT, "inventories")
_OUTPUT = {}


def _reads_shipped(argv):
    return any(os.path.dirname(os.path.abspath(arg)) == SHIPPED for arg in argv[1:] if arg.endswith(".yml"))


@pytest.fixture(autouse=True)
def shipped_inventory_once(monkeypatch):
    real = inventory.run_command

    def run_command(argv, timeout):
        if not _reads_shipped(argv):
            return real(argv, timeout)
        key = (tuple(argv), tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("ANSIBLE_"))))
        if key not in _OUTPUT:
            _OUTPUT[key] = real(argv, timeout)  # a failure raises here and is not kept
        return _OUTPUT[key]

    monkeypatch.setattr(inventory, "run_command", run_command)
