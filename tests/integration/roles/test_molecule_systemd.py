"""`molecule test -s systemd`: the roles' systemd paths on a systemd-booted node container.

The node image (gpufleet-sysd-node:bookworm, roles/cluster_join/molecule/systemd/node.Dockerfile)
runs /sbin/init as PID 1 with /sys/fs/cgroup mounted read-only (cgroup v1, docker 20.10, no
--privileged). rdma_fabric applies rails with systemd-networkd (rdma_fabric_apply: reload);
cluster_join runs munge and slurmd as units against the real slurmctld container
(cluster_join_service_manager: systemd), and in the same scenario, on the node it joined,
node_labels writes gres.conf and restarts slurmd through systemd (one converge, both roles'
verify). About 1.5-3 min per scenario on 2 cores.
"""
import os
import subprocess

import pytest

from tests.helpers import ROOT, ensure_base_image, need_docker
from tests.integration.roles.molecule_support import molecule_env as support_env
from tests.integration.roles.molecule_support import munge_key_file, passed_count, scenario_test_count, slurm_lab

pytestmark = [pytest.mark.integration, pytest.mark.molecule, pytest.mark.slow]

# cluster_join's systemd scenario covers node_labels too.
ROLES = ["rdma_fabric", "cluster_join"]
NODE_IMAGE = "gpufleet-sysd-node:bookworm"
NODE_DOCKERFILE = os.path.join(ROOT, "roles", "cluster_join", "molecule", "systemd", "node.Dockerfile")


def _build_node_image(base_image):
    # Always run the build: docker's layer cache makes an unchanged Dockerfile a no-op (~1 s).
    proc = subprocess.run(["docker", "build", "-q", "--build-arg", "BASE_IMAGE=" + base_image, "-t", NODE_IMAGE,
                           "-f", NODE_DOCKERFILE, os.path.dirname(NODE_DOCKERFILE)],
                          capture_output=True, text=True, timeout=900, check=False)
    if proc.returncode != 0:
        pytest.fail("building %s failed:\n%s%s" % (NODE_IMAGE, proc.stdout[-2000:], proc.stderr[-2000:]))


@pytest.fixture(scope="module")
def molecule_env(tmp_path_factory):
    need_docker()
    base_image = ensure_base_image()
    lab = slurm_lab()
    try:
        lab.build_image()
    except lab.SlurmLabError as exc:
        pytest.fail(str(exc))
    _build_node_image(base_image)
    return support_env(GPUFLEET_MOL_MUNGE_KEY_FILE=munge_key_file(tmp_path_factory))


@pytest.mark.parametrize("role", ROLES)
def test_molecule_systemd(role, molecule_env):
    proc = subprocess.run(["molecule", "test", "-s", "systemd"], cwd=os.path.join(ROOT, "roles", role),
                          env=molecule_env, capture_output=True, text=True, timeout=900, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, "molecule test -s systemd failed for %s:\n%s\n%s" % (
        role, proc.stdout[-6000:], proc.stderr[-3000:])
    assert "Idempotence completed successfully" in out or "idempotence: Executed: Successful" in out
    # The testinfra verify ran every test file (a scenario without tests would pass with "no tests
    # ran"; a merged scenario verifies two roles; parametrized tests count more than once).
    passed = passed_count(out)
    assert passed is not None and passed >= scenario_test_count(role, "systemd"), (passed, out[-3000:])
