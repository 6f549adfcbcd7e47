"""The playbooks whose node plays run on gpufleet_targets refuse a run without them, as
drain.yml does: before, wake.yml and revalidate.yml (which imports wake.yml) matched no host
and ended "ok" having done nothing. With a target the check lets the run through to the
node's first task; that task then fails on the empty ledger (no lab here), which is not
what these tests look at."""
import json
import os

import pytest

from tests.helpers import ROOT
from tests.integration.faults.ansible_run import ansible_playbook, unreadable_bmc

pytestmark = [pytest.mark.integration]

MESSAGE = "gpufleet_targets is not set; fix: pass -e gpufleet_targets=NODE[,NODE...]"
CHECK = "Refuse a run without targets"
# playbook -> the first task of its first play on the targets
PLAYBOOKS = {"wake.yml": "Record waking", "revalidate.yml": "Read the node's record", "drain.yml": None}


def _run(tmp_path, monkeypatch, playbook, extra):
    monkeypatch.setenv("ANSIBLE_STDOUT_CALLBACK", "ansible.posix.json")
    local = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
    inventory = {"all": {"hosts": {"n1": dict(local, **unreadable_bmc("1"))}}}
    extra = dict(extra, gpufleet_ledger=str(tmp_path / "ledger.db"))
    proc = ansible_playbook(tmp_path, os.path.join(ROOT, "playbooks", playbook), inventory, extra)
    try:
        plays = json.loads(proc.stdout)["plays"]
    except ValueError:
        raise AssertionError("ansible-playbook output is not JSON:\n%s\n%s" % (proc.stdout[-3000:],
                                                                               proc.stderr[-3000:]))
    return proc, [(task["task"]["name"], task["hosts"]) for play in plays for task in play["tasks"]]


@pytest.mark.parametrize("targets", [None, ""])
@pytest.mark.parametrize("playbook", sorted(PLAYBOOKS))
def test_a_run_without_targets_is_refused_naming_the_fix(tmp_path, monkeypatch, playbook, targets):
    proc, tasks = _run(tmp_path, monkeypatch, playbook, {} if targets is None else {"gpufleet_targets": targets})
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert tasks[-1][0] == CHECK and tasks[-1][1]["localhost"]["msg"] == MESSAGE, tasks


@pytest.mark.parametrize("playbook", sorted(name for name, first in PLAYBOOKS.items() if first))
def test_with_a_target_the_check_passes_and_the_run_reaches_the_node(tmp_path, monkeypatch, playbook):
    _proc, tasks = _run(tmp_path, monkeypatch, playbook, {"gpufleet_targets": "n1"})
    assert tasks[0][0] == CHECK and not tasks[0][1]["localhost"].get("failed"), tasks
    assert (PLAYBOOKS[playbook], ["n1"]) in [(name, list(hosts)) for name, hosts in tasks], tasks
