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
    out = [p for p in out if os.path.isfile(os.path.join(ROOT, p))]  # a deletion not yet committed is gone
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
    code = [p for p in tracked if (p.endswith((".py", ".mk", ".sh", ".yml", ".cfg", ".toml")) or p == "Makefile")
            and os.path.isfile(os.path.join(ROOT, p))]
    hits = []
    for path in code:
        with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as handle:
            hits.extend("%s:%d" % (path, i) for i, line in enumerate(handle, 1) if SYS_PATH_EDIT.search(line))
    assert not [h for h in hits if not h.startswith("tests/unit/architecture/")], hits


# Inside the controller package, imports run down only: view and report read what the controller
# writes, the controller never reads them back; modules never import each other in a circle.
def _module_name(path):
    """``controller/gpufleet/view/cli.py`` -> ``gpufleet.view.cli`` (a package's __init__: the package)."""
    name = os.path.splitext(os.path.relpath(path, "controller"))[0].replace(os.sep, ".")
    return name[:-len(".__init__")] if name.endswith(".__init__") else name


def _gpufleet_graph(files):
    """{module: modules it imports}: every import, function-level too; importing a.b.c runs a.b too."""
    modules = {_module_name(p): p for p in files}
    graph = {}
    for name, path in modules.items():
        deps = set()
        for module, names in _imports(path):
            for target in [module] + ["%s.%s" % (module, n) for n in names]:
                parts = target.split(".")
                deps.update(".".join(parts[:i]) for i in range(2, len(parts) + 1))
        graph[name] = {d for d in deps if d in modules and d != name and not name.startswith(d + ".")}
    return graph


def _cycles(graph):
    """The strongly connected parts with more than one member (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                part.append(member)
                if member == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _package_graph(graph):
    """The same imports between the controller package's first-level packages (gpufleet.view, ...)."""
    def package(module):
        return ".".join(module.split(".")[:2])
    out = {}
    for module, deps in graph.items():
        out.setdefault(package(module), set()).update(package(d) for d in deps if package(d) != package(module))
    return out


def _controller_files():
    return [p for p in _python_files("controller/gpufleet") if p.endswith(".py")]


def test_no_two_modules_of_the_controller_package_import_each_other_in_a_circle():
    graph = _gpufleet_graph(_controller_files())
    assert "gpufleet.simulate.trace" in graph  # the walk sees the package
    assert not _cycles(graph)


def test_no_two_packages_of_the_controller_package_import_each_other():
    """e.g. the loop (gpufleet.controller) importing gpufleet.view, which imports gpufleet.controller."""
    packages = _package_graph(_gpufleet_graph(_controller_files()))
    assert "gpufleet.controller" in packages["gpufleet.view"]  # the view reads the controller
    assert not _cycles(packages)


@pytest.mark.parametrize("lower, upper", [("controller", "view"), ("view", "report"),
                                          # the action model is the bottom every stage builds on
                                          ("work", "capacity"), ("work", "day2"), ("work", "controller"),
                                          ("work", "view")])
def test_a_lower_package_never_imports_an_upper_one(lower, upper):
    files = [p for p in _controller_files() if p.startswith("controller/gpufleet/%s/" % lower)]
    assert files
    assert not _violations(files, ("gpufleet." + upper,))


def test_the_cycle_check_catches_a_circle_through_a_function_level_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert not _cycles({"a": {"b"}, "b": set()})
