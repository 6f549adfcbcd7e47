"""ansible-inventory --graph/--list on the example rack descriptions, as a user runs it."""
import json
import os
import subprocess

import pytest

from tests.helpers import ROOT, VENV_BIN

pytestmark = pytest.mark.integration


def ansible_inventory(*args):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build", "collections"),
               ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible-inventory")] + list(args), cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_lab_graph_shows_two_racks():
    graph = ansible_inventory("-i", "inventories/lab.rack.yml", "--graph")
    assert "@rack_r1:" in graph and "@rack_r2:" in graph and "lab-r2n4" in graph


def test_production_list_has_32_hosts_with_8_rails():
    data = json.loads(ansible_inventory("-i", "inventories/prod-rack42.rack.yml", "--list"))
    hostvars = data["_meta"]["hostvars"]
    assert len(hostvars) == 32
    assert all(len(hv["gpufleet_rails"]) == 8 for hv in hostvars.values())


def test_invalid_description_fails_naming_the_entry(tmp_path):
    with open(os.path.join(ROOT, "inventories", "lab.rack.yml")) as handle:
        text = handle.read().replace("slots: 4, sku: lab, nodes: all}\n  - {name: r2",
                                     "slots: 4, sku: lab, nodes: [{slot: 9}]}\n  - {name: r2")
    bad = tmp_path / "bad.rack.yml"
    bad.write_text(text)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build", "collections"),
               ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible-inventory"), "-i", str(bad), "--list"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert "racks[0] (r1).nodes[0] is invalid: slot 9 is out of range 1..4" in proc.stderr
