"""Every shipped example loads end to end, without a lab, through the project's own loaders.

A rack description (``inventories/*.rack.yml``) goes through the rack inventory plugin; each
host's gate profile is found as the playbooks find it (``<gpufleet_gate_profile_dir or
profiles/gate>/<gpufleet_gate_profile>.yml``) and loaded by the gate's loader; its image
version's pin file (``packer/versions/<version>.yml``) is loaded by the image build's loader.
Every capacity policy shipped, and every one the docs name, loads through
``gpufleet.capacity.policy``.
"""
import glob
import os
import re
from unittest import mock

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.profile import load_profile
from gpufleet.capacity.policy import load_policy
from gpufleet.image.pins import load_pins
from lab.twin import lab as lab_twin
from tests.helpers import ROOT
from tests.unit.plugins.inventory.test_rack import parse, plugin  # noqa: F401  (plugin is a fixture)

INVENTORIES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "inventories", "*.rack.y*ml")))
SHIPPED_PROFILES = os.path.join(ROOT, "profiles", "gate")
PIN_FILES = os.path.join(ROOT, "packer", "versions")
# Folders never shipped to users as examples: tests' own fixtures, build output, tooling.
NOT_EXAMPLES = (".git", ".venv", "build", "tests", ".hypothesis")
DOCS = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
# A policy path given to --policy / --compare or load_policy(...) in the docs.
POLICY_PATH = r"((?:[\w.-]+/)+[\w.-]+\.ya?ml)"
DOC_POLICY = re.compile(r"--policy\s+%s|load_policy\(\"%s" % (POLICY_PATH, POLICY_PATH))


def _lab_extra_vars():
    """The extra vars the lab passes to every playbook (the lab's own function, no lab started)."""
    cfg = mock.MagicMock(hwsim={}, artifacts_root=os.path.join(ROOT, "build", "lab", "artifacts"))
    return lab_twin.playbook_vars(cfg, "munge.key")


# Extra vars a shipped example is run with (Ansible's extra vars win over host vars). The
# production example runs with none: it must work as shipped.
EXTRA_VARS = {"lab.rack.yml": _lab_extra_vars}


def _hosts(plugin, name):  # noqa: F811  (plugin is the fixture)
    inventory = parse(plugin, os.path.join(ROOT, "inventories", name))
    extra = EXTRA_VARS[name]() if name in EXTRA_VARS else {}
    return [(host.name, dict(host.vars, **extra)) for host in inventory.hosts.values()]


def test_every_inventory_example_is_checked():
    assert "prod-rack42.rack.yml" in INVENTORIES and "lab.rack.yml" in INVENTORIES


@pytest.mark.parametrize("name", INVENTORIES)
def test_inventory_example_gate_profiles_exist_and_load(plugin, name):  # noqa: F811
    hosts = _hosts(plugin, name)
    assert hosts, "%s describes no host" % name
    loaded = {}
    for host, hostvars in hosts:
        folder = hostvars.get("gpufleet_gate_profile_dir") or SHIPPED_PROFILES
        wanted = hostvars["gpufleet_gate_profile"]
        path = os.path.join(folder, wanted + ".yml")
        if path not in loaded:
            assert os.path.isfile(path), (
                "%s: host %s names gate profile %r, but %s does not exist; profiles there: %s"
                % (name, host, wanted, path, sorted(f[:-4] for f in os.listdir(folder) if f.endswith(".yml"))))
            loaded[path] = load_profile(path)
        assert loaded[path].name == wanted


@pytest.mark.parametrize("name", INVENTORIES)
def test_inventory_example_image_versions_have_valid_pin_files(plugin, name):  # noqa: F811
    versions = {hostvars["gpufleet_image_version"] for _, hostvars in _hosts(plugin, name)}
    assert versions
    for version in sorted(versions):
        pins = load_pins(PIN_FILES, version)  # PinError names the missing file and the known versions
        assert pins.version == version


def _shipped_policies():
    """Every YAML file outside tests and build output whose top level has ``pools:``."""
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if os.path.relpath(os.path.join(folder, d), ROOT) not in NOT_EXAMPLES]
        for name in files:
            if name.endswith((".yml", ".yaml")):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8", errors="replace") as handle:
                    if re.search(r"^pools:", handle.read(), re.M):
                        found.append(os.path.relpath(path, ROOT))
    return sorted(found)


POLICIES = _shipped_policies()


def _policies_named_in_docs():
    named = set()
    for doc in DOCS:
        with open(doc, encoding="utf-8") as handle:
            text = handle.read()
        for match in DOC_POLICY.finditer(text):
            path = match.group(1) or match.group(2)
            if not path.startswith("/"):  # /etc/... is the reader's own file
                named.add((os.path.relpath(doc, ROOT), path))
        # --compare takes several files: the ones after the first
        for match in re.finditer(r"--compare((?:\s+%s)+)" % POLICY_PATH, text):
            named.update((os.path.relpath(doc, ROOT), p) for p in match.group(1).split())
    return sorted(named)


def test_policy_examples_are_found():
    for expected in ("controller/gpufleet/capacity/examples/production.yml", "lab/config/capacity.yml",
                     "benchmarks/capacity/policies/floors.yml"):
        assert expected in POLICIES


@pytest.mark.parametrize("path", POLICIES)
def test_shipped_policy_loads(path):
    policy = load_policy(os.path.join(ROOT, path))
    assert policy.pools


@pytest.mark.parametrize("doc, path", _policies_named_in_docs())
def test_policy_named_in_docs_is_shipped(doc, path):
    assert path in POLICIES, "%s names the policy %s, which is not a shipped policy file" % (doc, path)
