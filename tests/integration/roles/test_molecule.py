"""`molecule test` for every per-node role (docker driver, images built locally).

cluster_join and node_drain run against a real slurmctld container
(gpufleet/slurmctld:bookworm from lab/slurm/); images come from the debootstrap base image,
so no registry is needed. cluster_join's scenario also converges node_labels on the node it
joined and runs both roles' verify (node_labels has no default scenario of its own). About
1-4 min per scenario on 2 cores.
"""
import os
import subprocess

import pytest

from tests.helpers import ROOT, ensure_base_image, need_docker
from tests.integration.roles.molecule_support import molecule_env as support_env
from tests.integration.roles.molecule_support import munge_key_file, passed_count, scenario_test_count, slurm_lab

pytestmark = [pytest.mark.integration, pytest.mark.molecule, pytest.mark.slow]

# The roles whose molecule/default scenario runs; cluster_join's covers node_labels too.
ROLES = ["node_identity", "rdma_fabric", "cluster_join", "node_drain"]


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
    out = proc.stdout + proc.stderr
    assert "Idempotence completed successfully" in out or "idempotence: Executed: Successful" in out
    # Every test file of the scenario ran (a merged scenario verifies two roles; parametrized tests count more).
    passed = passed_count(out)
    assert passed is not None and passed >= scenario_test_count(role, "default"), (passed, out[-3000:])
