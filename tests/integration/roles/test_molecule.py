"""`molecule test` for every per-node role (docker driver, images built locally).

cluster_join, node_drain and node_labels run against a real slurmctld container
(gpufleet/slurmctld:bookworm from lab/slurm/); images come from the debootstrap base image,
so no registry is needed. About 1-3 min per role on 2 cores.
"""
import base64
import importlib.util
import os
import subprocess

import pytest

from tests.helpers import ROOT, VENV_BIN, ensure_base_image, need_docker

pytestmark = [pytest.mark.integration, pytest.mark.molecule, pytest.mark.slow]

ROLES = ["node_identity", "rdma_fabric", "node_labels", "cluster_join", "node_drain"]


def _slurm_lab():
    spec = importlib.util.spec_from_file_location("gpufleet_slurm_lab", os.path.join(ROOT, "lab", "slurm", "slurmctld.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def molecule_env(tmp_path_factory):
    need_docker()
    ensure_base_image()
    lab = _slurm_lab()
    try:
        lab.build_image()
        lab.build_image(lab.NODE_IMAGE, "Dockerfile.node")
    except lab.SlurmLabError as exc:
        pytest.fail(str(exc))
    key = tmp_path_factory.mktemp("munge") / "munge.key"
    # Text key: the role writes cluster_join_munge_key verbatim, the controller mounts the file.
    key.write_bytes(base64.b64encode(os.urandom(48)))
    env = dict(os.environ)
    env.update({
        "PATH": VENV_BIN + os.pathsep + env.get("PATH", ""),
        "ANSIBLE_COLLECTIONS_PATH": os.path.join(ROOT, "build", "collections"),
        "GPUFLEET_MOL_MUNGE_KEY_FILE": str(key),
        "NO_COLOR": "1", "ANSIBLE_NOCOLOR": "1", "PY_COLORS": "0",
        # One `docker exec` per task instead of mkdir/put/exec/rm: the docker connection pipelines.
        "ANSIBLE_PIPELINING": "True",
    })
    return env


@pytest.mark.parametrize("role", ROLES)
def test_molecule(role, molecule_env):
    proc = subprocess.run(["molecule", "test"], cwd=os.path.join(ROOT, "roles", role), env=molecule_env,
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, "molecule test failed for %s:\n%s\n%s" % (role, proc.stdout[-6000:], proc.stderr[-3000:])
    assert "Idempotence completed successfully" in proc.stdout + proc.stderr or "idempotence: Executed: Successful" in proc.stdout + proc.stderr
