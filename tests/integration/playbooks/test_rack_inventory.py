"""The rack inventory as a user runs it, with the repository's ansible.cfg and no lab: a bad
rack description stops ansible-inventory and ansible-playbook (non-zero, the rack plugin's
message with its fix in the output) instead of a warning and "no hosts matched"; the shipped
descriptions and the other inventory forms the repository uses (YAML/JSON files, "localhost,")
still parse; a node's own BMC address wins over the fleet's network; a vaulted password
reference in the description is still templated. Each command takes about a second."""
import json
import os
import subprocess

import pytest

from tests.helpers import ROOT, VENV_BIN

pytestmark = [pytest.mark.integration]

LAB = os.path.join(ROOT, "inventories", "lab.rack.yml")
PLAY = "- hosts: gpufleet\n  gather_facts: false\n  tasks:\n    - ansible.builtin.debug: {msg: reached}\n"
SLOT_9 = "racks[0] (r1).nodes[0] is invalid: slot 9 is out of range 1..4 of rack r1. Fix: "


def _run(tool, *args):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build", "collections"),
               ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    return subprocess.run([os.path.join(VENV_BIN, tool)] + list(args), cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def _lab(tmp_path, name, old="", new=""):
    with open(LAB) as handle:
        text = handle.read()
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new, 1))
    return str(path)


def _bad_files(tmp_path):
    (tmp_path / "empty.rack.yml").write_text("")
    return {
        "slot": (_lab(tmp_path, "slot.rack.yml", "slots: 4, sku: lab, nodes: all}", "slots: 4, sku: lab, nodes: [{slot: 9}]}"),
                 SLOT_9),
        "empty": (str(tmp_path / "empty.rack.yml"), "(file) is invalid: the file is empty. Fix: "),
        "duplicate key": (_lab(tmp_path, "dup.rack.yml", "  mtu: 1500\n", "  mtu: 1500\n  mtu: 9000\n"),
                          "key 'mtu' appears twice (first on line 22). Fix: "),
    }


@pytest.mark.parametrize("case", ["slot", "empty", "duplicate key"])
def test_a_bad_rack_description_fails_ansible_inventory_and_ansible_playbook(tmp_path, case):
    path, message = _bad_files(tmp_path)[case]
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    graph = _run("ansible-inventory", "-i", path, "--graph")
    assert graph.returncode != 0 and message in graph.stderr, graph.stderr
    run = _run("ansible-playbook", "-i", path, str(play))
    output = run.stdout + run.stderr
    assert run.returncode != 0 and message in output and "reached" not in output, output


@pytest.mark.parametrize("name", ["lab.rack.yml", "prod-rack42.rack.yml"])
def test_the_shipped_descriptions_still_parse(name):
    proc = _run("ansible-inventory", "-i", os.path.join(ROOT, "inventories", name), "--list")
    assert proc.returncode == 0 and "WARNING" not in proc.stderr, proc.stderr
    assert len(json.loads(proc.stdout)["_meta"]["hostvars"]) == {"lab.rack.yml": 8, "prod-rack42.rack.yml": 32}[name]


def test_yaml_json_and_host_list_inventories_still_parse(tmp_path):
    (tmp_path / "inventory.yml").write_text("all:\n  hosts:\n    n1: {}\n")
    (tmp_path / "inventory.json").write_text(json.dumps({"all": {"hosts": {"n2": {}}}}))
    for source, host in [(str(tmp_path / "inventory.yml"), "n1"), (str(tmp_path / "inventory.json"), "n2"),
                         ("localhost,", "localhost")]:
        proc = _run("ansible-inventory", "-i", source, "--graph")
        assert proc.returncode == 0 and host in proc.stdout, proc.stderr


def test_a_node_bmc_address_wins_over_the_fleet_network(tmp_path):
    path = _lab(tmp_path, "net.rack.yml", '    address: "https://127.0.20.{rack_index}:8443"\n',
                "    network: 10.10.0.0/16\n")
    with open(path) as handle:
        text = handle.read().replace("{name: r1, index: 1, slots: 4, sku: lab, nodes: all}",
                                     "{name: r1, index: 1, slots: 4, sku: lab,\n"
                                     "     nodes: [{slot: 1}, {slot: 2, bmc: {address: 'https://10.99.0.2'}}]}")
    with open(path, "w") as handle:
        handle.write(text)
    own = _run("ansible-inventory", "-i", path, "--host", "lab-r1n2")
    derived = _run("ansible-inventory", "-i", path, "--host", "lab-r1n1")
    assert json.loads(own.stdout)["gpufleet_bmc_address"] == "https://10.99.0.2", own.stderr
    assert json.loads(derived.stdout)["gpufleet_bmc_address"] == "https://10.10.0.17", derived.stderr


def test_the_vault_reference_of_the_bmc_password_is_templated():
    proc = _run("ansible", "-i", LAB, "lab-r1n2", "-m", "ansible.builtin.debug", "-a", "var=gpufleet_bmc_password",
                "-e", "vault_gpufleet_bmc_password=from-the-vault")
    assert proc.returncode == 0 and '"gpufleet_bmc_password": "from-the-vault"' in proc.stdout, proc.stdout + proc.stderr
