"""`molecule test -s kubernetes` for node_labels, cluster_join and node_drain.

Each scenario runs the role's Kubernetes path against the lab's Kubernetes API SIMULATION
(lab/k8s/apiserver_sim.py in a container, TLS + bearer tokens) and, for cluster_join, the
kubeadm SIMULATION (lab/k8s/kubeadm_sim) in the node container: no real Kubernetes exists on
the CI machine. The three scenarios use distinct names and loopback addresses (127.0.30.1-3),
so they start together and each test waits for its own; about 3-5 min in all on 2 cores.
"""
import os
import subprocess

import pytest

from tests.helpers import ROOT, ensure_base_image, need_docker
from tests.integration.roles.molecule_support import molecule_env as support_env

pytestmark = [pytest.mark.integration, pytest.mark.molecule, pytest.mark.slow]

ROLES = ["cluster_join", "node_labels", "node_drain"]


@pytest.fixture(scope="module")
def molecule_runs(tmp_path_factory):
    need_docker()
    base = ensure_base_image()
    from lab.k8s import molecule_env as lab
    try:
        lab.build_node_image(base)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    env = support_env(**lab.prepare(str(tmp_path_factory.mktemp("k8s-lab"))))
    logs = tmp_path_factory.mktemp("k8s-molecule")
    runs = {}
    for role in ROLES:
        log = open(logs / (role + ".log"), "w+", encoding="utf-8")  # pylint: disable=consider-using-with
        proc = subprocess.Popen(["molecule", "test", "-s", "kubernetes"],  # pylint: disable=consider-using-with
                                cwd=os.path.join(ROOT, "roles", role), env=env, stdout=log,
                                stderr=subprocess.STDOUT, text=True)
        runs[role] = (proc, log)
    yield runs
    for proc, log in runs.values():
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


@pytest.mark.parametrize("role", ROLES)
def test_molecule_kubernetes(role, molecule_runs):
    proc, log = molecule_runs[role]
    try:
        returncode = proc.wait(timeout=900)
    except subprocess.TimeoutExpired:
        proc.kill()
        returncode = proc.wait()
    log.seek(0)
    output = log.read()
    assert returncode == 0, "molecule test -s kubernetes failed for %s:\n%s" % (role, output[-8000:])
    # Molecule's closing summary: one line per action of the test sequence.
    assert "kubernetes > idempotence: Executed: Successful" in output, output[-3000:]
    assert "kubernetes > verify: Executed: Successful" in output, output[-3000:]
