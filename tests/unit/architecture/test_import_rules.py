"""The layers of docs/architecture.md, enforced: imports flow lab -> controller -> collection.

- the collection (plugins/) imports neither the controller package nor the lab;
- the controller package (controller/gpufleet) never imports the lab;
- the lab reaches the other two only through public names (nothing starting with "_");
- nothing in the repository edits sys.path.
Static (ast) checks of every tracked Python file: no import is executed.
"""
import ast
import os
import re
import subprocess

import pytest

from tests.helpers import ROOT

COLLECTION = "ansible_collections.gpufleet.baremetal"


def _python_files(top):
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", top], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.split()
    return [p for p in out if p.endswith(".py") or _is_python_script(p)]


def _is_python_script(path):
    """An extension-less executable whose first line names python (e.g. lab/k8s/kubeadm_sim)."""
    full = os.path.join(ROOT, path)
    if os.path.splitext(path)[1] or not os.path.isfile(full):
        return False
    with open(full, "rb") as handle:
        first = handle.readline()
    return first.startswith(b"#!") and b"python" in first


def _imports(path):
    """(module, names) for every import statement of a file."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), filename=path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ()
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, tuple(a.name for a in node.names)


def _top(module):
    return module.split(".")[0]


def _violations(files, forbidden):
    return ["%s imports %s" % (path, module) for path in files for module, _names in _imports(path)
            if any(module == f or module.startswith(f + ".") for f in forbidden)]


def test_the_collection_imports_neither_the_controller_nor_the_lab():
    files = _python_files("plugins")
    assert len(files) > 50  # the walk sees the collection
    assert not _violations(files, ("gpufleet", "lab"))


def test_the_controller_package_never_imports_the_lab():
    files = _python_files("controller")
    assert any(p.endswith("gpufleet/main.py") for p in files)
    assert not _violations(files, ("lab",))


def _private_reach(path):
    bad = []
    for module, names in _imports(path):
        if not (module.startswith("gpufleet") or module.startswith(COLLECTION)):
            continue
        if any(part.startswith("_") and part != "__init__" for part in module.split(".")):
            bad.append("%s imports private module %s" % (path, module))
        bad.extend("%s imports private name %s from %s" % (path, n, module) for n in names if n.startswith("_"))
    return bad


def test_the_lab_reaches_controller_and_collection_through_public_names_only():
    files = _python_files("lab")
    assert any(p.endswith("twin/lab.py") for p in files)
    bad = [line for path in files for line in _private_reach(path)]
    assert not bad, bad


@pytest.mark.parametrize("source, expected", [
    ("from gpufleet.collection import _state\n", "private name _state"),
    ("from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers._common import x\n",
     "private module"),
])
def test_the_private_reach_check_catches_what_it_should(tmp_path, monkeypatch, source, expected):
    target = tmp_path / "probe.py"
    target.write_text(source)
    monkeypatch.setattr("tests.unit.architecture.test_import_rules.ROOT", str(tmp_path))
    assert any(expected in line for line in _private_reach("probe.py"))


SYS_PATH_EDIT = re.compile(r"sys\.path\.(insert|append|extend)\(|sys\.path\s*(\+?=|\[)")


def test_nothing_in_the_repository_edits_sys_path():
    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    code = [p for p in tracked if p.endswith((".py", ".mk", ".sh", ".yml", ".cfg", ".toml")) or p == "Makefile"]
    hits = []
    for path in code:
        with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as handle:
            hits.extend("%s:%d" % (path, i) for i, line in enumerate(handle, 1) if SYS_PATH_EDIT.search(line))
    assert not [h for h in hits if not h.startswith("tests/unit/architecture/")], hits
