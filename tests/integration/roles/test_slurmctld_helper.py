"""lab/slurm/slurmctld.py: the interface the lab uses to start its Slurm controller."""
import os
import subprocess

import pytest

from tests.helpers import ROOT, ensure_base_image, need_docker

pytestmark = pytest.mark.integration
NAME = "gpufleet-mol-helper-ctl"
NET = "gpufleet-mol-helper-net"


@pytest.fixture
def lab():
    need_docker()
    ensure_base_image()
    from lab.slurm import slurmctld as module
    module.build_image()
    subprocess.run(["docker", "network", "create", NET], capture_output=True, check=False)
    yield module
    module.stop_controller(NAME)
    subprocess.run(["docker", "network", "rm", NET], capture_output=True, check=False)


def test_start_renders_config_and_answers(lab, tmp_path):
    key = tmp_path / "munge.key"
    key.write_bytes(os.urandom(64))
    lab.start_controller(NAME, NET, "lab-r1n[1-4],lab-r2n[1-4]", str(key), cluster="gpufleetlab")
    ping = subprocess.run(["docker", "exec", NAME, "scontrol", "ping"], capture_output=True, text=True, check=False)
    assert "is UP" in ping.stdout
    conf = subprocess.run(["docker", "exec", NAME, "cat", "/etc/slurm/slurm.conf"], capture_output=True, text=True, check=False).stdout
    assert "ClusterName=gpufleetlab" in conf
    assert "NodeName=lab-r1n[1-4],lab-r2n[1-4] CPUs=1 RealMemory=64 State=CLOUD" in conf


def test_short_munge_key_is_refused(lab, tmp_path):
    key = tmp_path / "munge.key"
    key.write_bytes(b"short")
    with pytest.raises(lab.SlurmLabError, match="shorter than 32 bytes"):
        lab.start_controller(NAME, NET, "n1", str(key))
