"""The catalog is the only declaration of a check's facts: probes and profiles resolve through it."""
import ast
import dataclasses
import glob
import os

import pytest
import yaml

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate import catalog
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.catalog import (
    CHECKS, GATE_PHASES, HEALTH_CHECKS, KINDS, LOCAL_CHECKS, PHASES, check_spec)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.phases import plan
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.probes import PROBES, Probe, probe_by_name
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.profile import Threshold
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.units import UNITS
from tests.helpers import ROOT
from tests.unit.plugins.module_utils.gate.gate_support import PROFILES, load, shipped_path

GATE = os.path.join(ROOT, "plugins", "module_utils", "gate")


def test_check_names_are_unique_and_every_fact_is_valid():
    names = [spec.name for spec in CHECKS]
    assert len(names) == len(set(names))
    for spec in CHECKS:
        assert spec.phase in PHASES and spec.kind in KINDS, spec.name
        assert spec.unit is None or spec.unit in UNITS or not spec.in_profile, spec.name
        assert isinstance(spec.retryable, bool)
    # every gate phase has checks; health borrows the gpu phase's fast ones
    assert {spec.phase for spec in CHECKS} == set(GATE_PHASES) == set(PHASES) - {"health"}
    assert all(check_spec(name).phase == "gpu" for name in HEALTH_CHECKS)
    assert LOCAL_CHECKS == ("image_release", "tpm_quote")


def test_every_check_names_a_probe_and_every_probe_feeds_checks_of_one_phase():
    probe_names = [p.name for p in PROBES]
    assert len(probe_names) == len(set(probe_names))
    for spec in CHECKS:
        assert probe_by_name(spec.probe).name == spec.probe  # KeyError when the probe is not declared
    for probe in PROBES:
        assert probe.checks, "probe %s feeds no check" % probe.name
        assert {check_spec(c).phase for c in probe.checks} == {probe.phase}
        assert probe.retryable == any(check_spec(c).retryable for c in probe.checks)


def test_probes_run_in_phase_order():
    order = [PHASES.index(p.phase) for p in PROBES]
    assert order == sorted(order)


def test_probes_and_thresholds_do_not_redeclare_catalog_facts():
    """phase, unit, retryable and the fed checks live in CheckSpec only; the others derive them."""
    facts = {"phase", "retryable", "checks", "kind", "upper"}
    assert not facts & {f.name for f in dataclasses.fields(Probe)}
    assert not facts & {f.name for f in dataclasses.fields(Threshold)}
    assert {f.name for f in dataclasses.fields(catalog.CheckSpec)} >= {"phase", "unit", "retryable", "probe"}


def _literal_phases(path):
    """Phase strings given as a result's phase or compared with a ``.phase``: second declarations."""
    found = []
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in (
                "CheckResult", "failed_closed", "_closed", "_skipped"):
            args = node.args[1:2] + [k.value for k in node.keywords if k.arg == "phase"]
            found += [a.value for a in args if isinstance(a, ast.Constant) and a.value in PHASES]
        if isinstance(node, ast.Compare) and any(getattr(n, "attr", None) == "phase"
                                                 for n in [node.left] + node.comparators):
            found += [n.value for n in [node.left] + node.comparators if isinstance(n, ast.Constant)]
    return found


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(GATE, "*.py")) + glob.glob(
    os.path.join(ROOT, "controller", "gpufleet", "gate", "*.py"))), ids=os.path.basename)
def test_no_gate_module_declares_a_check_phase(path):
    found = _literal_phases(path)
    assert not found, "%s declares phase(s) %s; read them from catalog.check_spec()" % (path, found)


def test_the_phase_scan_finds_a_literal(tmp_path):
    """The scan above can fail: a result built with a literal phase is found."""
    sample = tmp_path / "sample.py"
    sample.write_text('r = CheckResult("xid", "gpu", 1, 0, "xid", "fail", "r")\nok = t.phase == "nvlink"\n')
    assert _literal_phases(str(sample)) == ["gpu", "nvlink"]


@pytest.mark.parametrize("name", PROFILES)
def test_every_profile_key_resolves_through_the_catalog(name):
    with open(shipped_path(name)) as handle:
        data = yaml.safe_load(handle)
    prof = load(name)
    for check, spec in data["checks"].items():
        entry = check_spec(check)
        assert entry.in_profile
        threshold = prof.threshold(check)
        assert threshold.spec is entry and threshold.phase == entry.phase
        params = set(spec) - {"unit", "retries", "min", "max", "equals", "one_of", "deny", "pins", "max_failures"}
        assert params <= set(entry.param_kinds()), (check, params)


def test_plan_takes_phases_from_the_catalog():
    prof = load("h100-sxm-8x")
    for phase, probes in plan(prof):
        for probe, checks in probes:
            assert all(check_spec(c).phase == phase == probe.phase for c in checks)
