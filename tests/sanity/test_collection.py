"""The collection as the ecosystem sees it: ansible-test sanity, ansible-lint (production
profile), a built and installed tarball, and an execution environment definition that
ansible-builder accepts. Each runs the real tool; a failure prints the tool's own output."""
import glob
import os
import subprocess

import pytest

from tests.helpers import ROOT, VENV_BIN, need_tool

pytestmark = pytest.mark.sanity


def _run(cmd, **kwargs):
    env = dict(os.environ, PATH=VENV_BIN + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False, **kwargs)
    output = proc.stdout + proc.stderr
    return proc.returncode, output


def _interesting(output, limit=6000):
    noise = ("WARNING: Location", "Looking in", "Collecting", "  Downloading", "Installing collected",
             "Successfully", "     ")
    lines = [line for line in output.splitlines() if not line.startswith(noise)]
    return "\n".join(lines)[-limit:]


def test_ansible_test_sanity_passes_with_no_ignores():
    assert not glob.glob(os.path.join(ROOT, "tests", "sanity", "ignore-*.txt")), "sanity ignore files are not allowed"
    need_tool("shellcheck")
    rc, output = _run([os.path.join(ROOT, "scripts", "sanity.sh")])
    assert rc == 0, _interesting(output)


def test_ansible_lint_production_profile_passes():
    rc, output = _run([os.path.join(VENV_BIN, "ansible-lint"), "--profile", "production", "--offline"])
    assert rc == 0, _interesting(output)


@pytest.fixture(scope="module")
def built_collection(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    rc, output = _run([os.path.join(VENV_BIN, "ansible-galaxy"), "collection", "build", "--force",
                       "--output-path", str(out), ROOT])
    assert rc == 0, output
    tarballs = glob.glob(str(out / "gpufleet-baremetal-*.tar.gz"))
    assert len(tarballs) == 1, tarballs
    return tarballs[0]


def test_built_collection_installs_and_lists_its_modules(built_collection, tmp_path):
    rc, output = _run([os.path.join(VENV_BIN, "ansible-galaxy"), "collection", "install", "--offline", "--force",
                       "-p", str(tmp_path), built_collection])
    assert rc == 0, output
    installed = tmp_path / "ansible_collections" / "gpufleet" / "baremetal"
    assert (installed / "MANIFEST.json").is_file()
    # lab/ and cli/ are controller tooling and lab simulation: they must never ship.
    assert not (installed / "lab").exists()
    assert not (installed / "cli").exists()
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path))
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible-doc"), "-l", "gpufleet.baremetal"], env=env,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    shipped = sorted(p.stem for p in (installed / "plugins" / "modules").glob("*.py"))
    listed = proc.stdout
    missing = [name for name in shipped if "gpufleet.baremetal." + name not in listed]
    assert not missing, "modules not listed by ansible-doc: %s" % missing


def test_execution_environment_is_accepted_by_ansible_builder(built_collection, tmp_path):
    dist = os.path.join(ROOT, "build", "dist")
    os.makedirs(dist, exist_ok=True)
    for old in glob.glob(os.path.join(dist, "gpufleet-baremetal-*.tar.gz")):
        os.remove(old)
    subprocess.run(["cp", built_collection, dist], check=True)
    rc, output = _run([os.path.join(VENV_BIN, "ansible-builder"), "create", "-f", "execution-environment.yml",
                       "-c", str(tmp_path / "context"), "--output-filename", "Containerfile"])
    assert rc == 0, output
    containerfile = (tmp_path / "context" / "Containerfile").read_text()
    assert "gpufleet-baremetal-" in containerfile or "collections" in containerfile
