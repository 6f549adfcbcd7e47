"""playbooks/image_features.yml on a stand-in Slurm controller host (a local host): the file
job_submit.lua reads holds exactly the features given, sorted, once each; a second run
changes nothing; a list with something that is no image feature is refused, naming the fix."""
import os

import pytest

from tests.helpers import ROOT
from tests.integration.faults.ansible_run import ansible_playbook

pytestmark = [pytest.mark.integration]

PLAYBOOK = os.path.join(ROOT, "playbooks", "image_features.yml")


def _write(tmp_path, features):
    local = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
    inventory = {"all": {"hosts": {"localhost": local, "ctl": local}}}
    dest = tmp_path / "gpufleet-image-features"
    proc = ansible_playbook(tmp_path, PLAYBOOK, inventory, {
        "gpufleet_image_features": features, "gpufleet_slurm_controller_host": "ctl",
        "gpufleet_slurm_image_features_file": str(dest)})
    return proc, dest


def _lines(dest):
    return [line for line in dest.read_text().splitlines() if line and not line.startswith("#")]


def test_the_file_lists_the_features_sorted_once_each_and_a_rerun_changes_nothing(tmp_path):
    proc, dest = _write(tmp_path, ["image_v2", "image_v1", "image_v2"])
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert _lines(dest) == ["image_v1", "image_v2"]
    assert oct(dest.stat().st_mode & 0o777) == "0o644"      # slurmctld (user slurm) reads it
    again, _dest = _write(tmp_path, ["image_v1", "image_v2"])
    assert again.returncode == 0 and "changed=0" in again.stdout.split("PLAY RECAP")[-1], again.stdout[-2000:]


@pytest.mark.parametrize("features", [["image_v1", "nvme"], "image_v1", ["image_v1;rm -rf /"]])
def test_anything_that_is_no_image_feature_is_refused_and_nothing_written(tmp_path, features):
    proc, dest = _write(tmp_path, features)
    assert proc.returncode != 0 and not dest.exists()
    assert "gpufleet_image_features must be a list of Slurm features image_<version>" in proc.stdout, proc.stdout[-2000:]
    assert "Fix: pass -e" in proc.stdout
