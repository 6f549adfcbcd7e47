"""playbooks/bmc_health.yml (the controller's day-2 Redfish read) against the emulated rack:
every target read by one module run, each node's health, power state or error written, no
password in the output or the reading."""
import json
import os
import re
import subprocess

import yaml

from lab.bmc.pki import ensure_pki
from tests.helpers import ROOT, VENV_BIN


def _read(tmp_path, lab, hosts, targets):
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {
        "vars": {"gpufleet_bmc_username": lab.cfg["username"], "gpufleet_bmc_password": lab.cfg["password"],
                 "gpufleet_bmc_ca_path": lab.ca, "ansible_python_interpreter": os.path.join(VENV_BIN, "python")},
        "hosts": hosts}}))
    out = tmp_path / "reading.json"
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build", "collections"),
               ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(
        [os.path.join(VENV_BIN, "ansible-playbook"), "-vvv", "-i", str(inventory),
         os.path.join(ROOT, "playbooks", "bmc_health.yml"),
         "-e", json.dumps({"gpufleet_targets": ",".join(targets), "gpufleet_bmc_read_out": str(out)})],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert lab.cfg["password"] not in proc.stdout + proc.stderr + out.read_text()
    return json.loads(out.read_text()), proc.stdout


def test_every_target_in_one_module_run_each_with_its_reading_or_its_error(lab, tmp_path):
    first, second = lab.nodes[:2]
    other_ca = ensure_pki(str(tmp_path / "other-pki"), ["127.0.11.1"])["ca.pem"]   # not the rack's CA
    hosts = {
        "n1": {"gpufleet_bmc_address": first["baseuri"], "gpufleet_bmc_system_id": first["system_id"]},
        "n2": {"gpufleet_bmc_address": first["baseuri"], "gpufleet_bmc_system_id": second["system_id"]},
        # per-node CA and verification reach that node's client only
        "wrong_ca": {"gpufleet_bmc_address": first["baseuri"], "gpufleet_bmc_system_id": first["system_id"],
                     "gpufleet_bmc_ca_path": other_ca},
        "unverified": {"gpufleet_bmc_address": first["baseuri"], "gpufleet_bmc_system_id": first["system_id"],
                       "gpufleet_bmc_ca_path": other_ca, "gpufleet_bmc_validate_certs": False},
        "gone": {"gpufleet_bmc_address": "127.0.11.1:1", "gpufleet_bmc_system_id": "x"},
        "unset": {},
    }
    reading, out = _read(tmp_path, lab, hosts, sorted(hosts))
    assert set(reading) == set(hosts)
    for node in ("n1", "n2", "unverified"):
        assert reading[node]["error"] is None and reading[node]["health"] and reading[node]["power_state"] in (
            "On", "Off"), reading
    assert reading["wrong_ca"]["health"] is None and "certificate" in reading["wrong_ca"]["error"].lower(), reading
    assert reading["gone"]["health"] is None and "BMC of node gone at https://127.0.11.1:1" in reading["gone"]["error"]
    assert reading["unset"]["health"] is None and "no gpufleet_bmc_address" in reading["unset"]["error"]
    # one redfish_info run for the five addressed nodes: one result, and its summary counts them
    assert len(re.findall(r'"total": 5\b', out)) == 1 and '"total": 1' not in out, out[-3000:]


def test_a_lone_target_that_cannot_be_read_is_written_with_its_error(lab, tmp_path):
    reading, _ = _read(tmp_path, lab, {"gone": {"gpufleet_bmc_address": "127.0.11.1:1", "gpufleet_bmc_system_id": "x"}},
                       ["gone"])
    assert reading["gone"]["health"] is None and "did not answer" in reading["gone"]["error"], reading
