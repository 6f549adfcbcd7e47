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
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path))
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible-doc"), "-l", "gpufleet.baremetal"], env=env,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    shipped = sorted(p.stem for p in (installed / "plugins" / "modules").glob("*.py"))
    listed = proc.stdout
    missing = [name for name in shipped if "gpufleet.baremetal." + name not in listed]
    assert not missing, "modules not listed by ansible-doc: %s" % missing


# What may ship: what runs under Ansible, its metadata and its docs (galaxy.yml's build_ignore).
SHIPPED_TOP = {"FILES.json", "MANIFEST.json", "README.md", "changelogs", "docs", "meta", "playbooks",
               "plugins", "profiles", "roles"}


def _tar_names(tarball):
    import tarfile
    with tarfile.open(tarball) as archive:
        return [m.name for m in archive.getmembers() if m.isfile()]


def test_built_collection_holds_only_what_runs_under_ansible(built_collection):
    names = _tar_names(built_collection)
    assert "plugins/modules/redfish_power.py" in names  # the listing is real
    stray = sorted(n for n in names if n.split("/")[0] not in SHIPPED_TOP)
    assert not stray, "files outside what runs under Ansible: %s" % stray
    lab_only = sorted(n for n in names if "/molecule/" in n or n.startswith("docs/lab")
                      or os.path.basename(n) in ("lab.yml", "redfish_demo.yml", "lab_controller.yml"))
    assert not lab_only, "lab-only files shipped: %s" % lab_only
    unused = sorted(set(n for n in names if n.startswith("plugins/module_utils/") and n.endswith(".py")
                        and not n.endswith("__init__.py")) - _module_utils_used_by_plugins())
    assert not unused, "module_utils no module or plugin imports (controller-only?): %s" % unused


def _module_utils_used_by_plugins():
    """Module_utils files reachable by imports from the modules, the inventory and the filter plugins."""
    import ast
    prefix = "ansible_collections.gpufleet.baremetal."
    todo = glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py")) + \
        glob.glob(os.path.join(ROOT, "plugins", "inventory", "*.py")) + \
        glob.glob(os.path.join(ROOT, "plugins", "filter", "*.py"))
    seen = set()
    while todo:
        path = todo.pop()
        with open(path) as handle:
            tree = ast.parse(handle.read())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(prefix):
                names = [node.module] + [node.module + "." + a.name for a in node.names]
            for name in names:
                rel = name[len(prefix):].replace(".", "/") + ".py"
                if os.path.isfile(os.path.join(ROOT, rel)) and rel not in seen:
                    seen.add(rel)
                    todo.append(os.path.join(ROOT, rel))
    return seen


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
