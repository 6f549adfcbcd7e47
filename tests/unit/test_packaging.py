"""The controller wheel and the execution environment carry what the docs say they do."""
import fnmatch
import os
import re
import tomllib

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PACKAGE = os.path.join(ROOT, "controller", "gpufleet")


def pyproject():
    with open(os.path.join(ROOT, "controller", "pyproject.toml"), "rb") as handle:
        return tomllib.load(handle)


def ee():
    with open(os.path.join(ROOT, "execution-environment.yml")) as handle:
        return yaml.safe_load(handle)


def requirement_lines():
    with open(os.path.join(ROOT, "requirements.txt")) as handle:
        return [line.strip() for line in handle if line.strip() and not line.lstrip().startswith("#")]


def data_files():
    """Every file of the package that is not Python source, relative to the package."""
    found = []
    for folder, dirs, files in os.walk(PACKAGE):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        found += [os.path.relpath(os.path.join(folder, f), PACKAGE) for f in files if not f.endswith((".py", ".pyc"))]
    return sorted(found)


def test_the_wheel_carries_every_data_file_of_the_package_and_the_example_policies():
    patterns = pyproject()["tool"]["setuptools"]["package-data"]["gpufleet"]
    files = data_files()
    shown = {"capacity/examples/lab.yml", "capacity/examples/production.yml", "simulate/default_policy.yml"}
    assert shown <= set(files)
    missing = [f for f in files if not any(fnmatch.fnmatch(f, p) for p in patterns)]
    assert missing == [], "add these to [tool.setuptools.package-data] in controller/pyproject.toml: %s" % missing


def test_the_ee_s_python_dependencies_are_requirements_txt_pins():
    pins = set(requirement_lines())
    ee_python = ee()["dependencies"]["python"]
    assert [dep for dep in ee_python if dep not in pins] == []


def test_the_ee_provides_every_dependency_of_the_gpufleet_wheel():
    deps = ee()["dependencies"]
    provided = {canonicalize_name(Requirement(d).name) for d in deps["python"]} | {
        canonicalize_name(Requirement(deps[k]["package_pip"]).name) for k in ("ansible_core", "ansible_runner")}
    wanted = {canonicalize_name(Requirement(d).name) for d in pyproject()["project"]["dependencies"]}
    assert sorted(wanted - provided) == []


def test_the_ee_installs_the_wheel_the_build_target_makes_where_it_copies_from():
    definition = ee()
    steps = definition["additional_build_steps"]["append_final"]
    (copied,) = [f for f in definition["additional_build_files"] if f["dest"] == "collections"]
    installs = [s for s in steps if "pip install" in s]
    (pattern,) = re.findall(r"/build/collections/(\S+\.whl)", " ".join(installs))
    wheel = "gpufleet-%s-py3-none-any.whl" % pyproject()["project"]["version"]
    assert fnmatch.fnmatch(wheel, pattern) and not fnmatch.fnmatch("gpufleet-baremetal-0.1.0.tar.gz", pattern)
    assert "COPY _build/collections /build/collections" in steps[0]   # the final stage has no /build of its own
    with open(os.path.join(ROOT, "Makefile")) as handle:
        makefile = handle.read()
    assert "pip wheel --no-deps -w %s controller/" % copied["src"] in makefile


def test_the_ee_does_not_install_sushy_which_nothing_it_runs_imports():
    assert not [d for d in ee()["dependencies"]["python"] if canonicalize_name(Requirement(d).name) == "sushy"]
    importing = re.compile(r"^\s*(import sushy\b|from sushy(\.| ))", re.M)
    users = []
    for top in ("controller", "plugins", "roles", "playbooks"):
        for folder, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith(".py"):
                    with open(os.path.join(folder, name), encoding="utf-8") as handle:
                        if importing.search(handle.read()):
                            users.append(os.path.join(folder, name))
    assert users == []
