"""`molecule test` for every per-node role (docker driver, images built locally).

cluster_join, node_drain and node_labels run against a real slurmctld container
(gpufleet/slurmctld:bookworm from lab/slurm/); images come from the debootstrap base image,
so no registry is needed. About 1-3 min per role on 2 cores.
"""
import os
import subprocess

import pytest

from tests.helpers import ROOT, ensure_base_image, need_docker
from tests.integration.roles.molecule_support import molecule_env as support_env
from tests.integration.roles.molecule_support import munge_key_file, slurm_lab

pytestmark = [pytest.mark.integration, pytest.mark.molecule, pytest.mark.slow]

ROLES = ["node_identity", "rdma_fabric", "node_labels", "cluster_join", "node_drain"]


@pytest.fixture(scope="module")
def molecule_env(tmp_path_factory):
    need_docker()
    ensure_base_image()
    lab = slurm_lab()
    try:
        lab.build_image()
        lab.build_image(lab.NODE_IMAGE, "Dockerfile.node")
    except lab.SlurmLabError as exc:
        pytest.fail(str(exc))
    return support_env(GPUFLEET_MOL_MUNGE_KEY_FILE=munge_key_file(tmp_path_factory))


@pytest.mark.parametrize("role", ROLES)
def test_molecule(role, molecule_env):
    proc = subprocess.run(["molecule", "test"], cwd=os.path.join(ROOT, "roles", role), env=molecule_env,
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, "molecule test failed for %s:\n%s\n%s" % (role, proc.stdout[-6000:], proc.stderr[-3000:])
    assert "Idempotence completed successfully" in proc.stdout + proc.stderr or "idempotence: Executed: Successful" in proc.stdout + proc.stderr
