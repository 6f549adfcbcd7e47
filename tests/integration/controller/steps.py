"""What the controller lab scenarios share: the gpufleet command, the ledger's decisions and
history, a node's BMC power state. The lab itself is the session fixture in conftest.py."""
import json
import os
import subprocess

import pytest
import requests
import yaml

from lab import controller_demo as demo
from lab.twin import config as lab_config
from tests.helpers import ROOT

GPUFLEET = os.path.join(ROOT, ".venv", "bin", "gpufleet")
POLICY = os.path.join(ROOT, "lab", "config", "capacity.yml")

# The controller's Prometheus endpoint in these scenarios (loopback only).
METRICS_PORT = 19478

# Every scenario module here: `pytestmark = LAB_MARKS` (part of `make test`; alone:
# `make test-controller-lab`).
LAB_MARKS = [pytest.mark.integration, pytest.mark.slow]


def gpufleet(*args, timeout=1500, check=True):
    proc = subprocess.run([GPUFLEET] + list(args), cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        pytest.fail("gpufleet %s failed (%d):\n%s\n%s" % (" ".join(args), proc.returncode, proc.stdout[-4000:],
                                                          proc.stderr[-3000:]))
    return proc


def decisions():
    led = demo.ledger()
    try:
        return demo.records.decisions(led)
    finally:
        led.close()


def history():
    led = demo.ledger()
    try:
        return led.history()
    finally:
        led.close()


def _bmc(node):
    """(system URL, auth, CA) of a lab node's BMC. The vars file holds a lookup of the lab's
    secret file, not the password: ask the lab."""
    cfg = lab_config.load(None)
    with open(os.path.join(ROOT, "build", "lab", "vars.yml")) as handle:
        lab_vars = yaml.safe_load(handle)
    rack = node.split("r")[1].split("n")[0]
    url = "https://127.0.20.%s:8443/redfish/v1/Systems/%s" % (rack, node)
    return url, (lab_vars["vault_gpufleet_bmc_username"], cfg.bmc_password), lab_vars["gpufleet_bmc_ca_path"]


def power_state(node):
    url, auth, ca = _bmc(node)
    answer = requests.get(url, auth=auth, verify=ca, timeout=30)
    assert answer.status_code == 200, (url, answer.status_code, answer.text[:300])
    return answer.json()["PowerState"]




def start_controller():
    return demo.Controller(interval=3, metrics_port=METRICS_PORT).start()


def why(subject, check=True):
    """`gpufleet why SUBJECT --lab --json`: (exit code, answer)."""
    proc = gpufleet("why", subject, "--lab", "--policy", POLICY, "--json", timeout=120, check=False)
    if check and not proc.stdout.strip():
        pytest.fail("gpufleet why %s printed nothing (exit %d): %s" % (subject, proc.returncode, proc.stderr[-2000:]))
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None


def power_off_behind_the_controllers_back(node):
    """ForceOff through the node's BMC, as a tripped PDU or a person at the rack would."""
    url, auth, ca = _bmc(node)
    answer = requests.post(url + "/Actions/ComputerSystem.Reset", json={"ResetType": "ForceOff"}, auth=auth,
                           verify=ca, timeout=30)
    assert answer.status_code in (200, 202, 204), (url, answer.status_code, answer.text[:300])
