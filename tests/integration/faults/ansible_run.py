"""Run a test playbook with the repository's Ansible setup, against hosts the test describes."""
import json
import os
import socket
import subprocess

from gpufleet.collection import collections_path
from tests.helpers import ROOT, VENV_BIN


def closed_port():
    """A local TCP port nothing listens on (bound, read, released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def unreadable_bmc(system_id):
    """BMC variables of a node whose BMC refuses connections."""
    return {"gpufleet_bmc_address": "https://127.0.0.1:%d" % closed_port(), "gpufleet_bmc_username": "admin",
            "gpufleet_bmc_password": "unused", "gpufleet_bmc_system_id": system_id,
            "gpufleet_bmc_validate_certs": False}


def ansible_playbook(tmp_path, playbook, inventory, extra):
    """ansible-playbook ``playbook`` on ``inventory`` (a dict, written as JSON); the CompletedProcess."""
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps(inventory))  # YAML, which the inventory plugin reads, is a superset of JSON
    env = dict(os.environ, PATH=VENV_BIN + os.pathsep + os.environ["PATH"], ANSIBLE_COLLECTIONS_PATH=collections_path(),
               ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
    command = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", str(path), playbook, "-e", json.dumps(extra)]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300, check=False)
