import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.dcgmi import parse_dcgmi
from tests.helpers import shared_fixture

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "dcgmi")


def read(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_real_dcgm3_level3_single_gpu():
    with open(shared_fixture("real-outputs", "dcgmi_diag_r3_dcgm3x_1gpu.json")) as handle:
        diag = parse_dcgmi(handle.read())
    statuses = diag.statuses()
    assert diag.schema == "3.x"
    assert len(statuses) == 16
    assert statuses["EUD Test"] == "skip"
    assert statuses["Memory Bandwidth"] == "pass"
    assert not diag.failures()
    assert {r.entity for r in diag.results} == {"", "GPU0"}


@pytest.mark.parametrize("name, schema, version, failed, entities", [
    ("4.1-pass-8gpu.txt", "4.x", "4.1.1", [], 8),
    ("4.1-fail-memory-gpu3.txt", "4.x", "4.1.1", [("memory", "GPU3")], 8),
    ("3.3-fail-2gpu-pcie.txt", "3.x", "3.3.5", [("PCIe", "GPU1")], 2),
])
def test_own_fixtures(name, schema, version, failed, entities):
    diag = parse_dcgmi(read(name))
    assert diag.schema == schema
    assert diag.dcgm_version == version
    assert [(r.test, r.entity) for r in diag.failures()] == failed
    assert len({r.entity for r in diag.results if r.entity}) == entities
    for test, _entity in failed:
        assert diag.statuses()[test] == "fail"


def test_dcgm4_failure_carries_warning_and_error_id():
    diag = parse_dcgmi(read("4.1-fail-memory-gpu3.txt"))
    (failure,) = diag.failures()
    assert "memory mismatch" in failure.warnings[0]
    assert "(error_id 95)" in failure.warnings[0]
    assert diag.driver_version == "570.124.06"


@pytest.mark.parametrize("text, expected", [
    ("", "the output is empty"),
    ("dcgmi: command not found\n", "no line starts a JSON object"),
    ('{"DCGM GPU Diagnostic": {"test_categories": [', "invalid JSON"),
    ('{"something": {}}', "found keys: something"),
    ('{"DCGM Diagnostic": {"test_categories": []}}', "holds no results"),
    ('{"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [{"name": "memory",'
     ' "results": [{"entity_id": 0, "status": "Exploded"}]}]}]}}', "found 'Exploded'"),
    ('{"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [{"name": "memory",'
     ' "results": [{"entity_id": 0}]}]}]}}', 'a "status" in every result'),
    ('{"DCGM Diagnostic": {"test_categories": [{"tests": []}]}}', "test_categories/0/category"),
])
def test_malformed_output_fails_closed(text, expected):
    with pytest.raises(ParseError) as err:
        parse_dcgmi(text)
    assert expected in str(err.value)
    assert err.value.tool == "dcgmi diag"


def test_runtime_error_is_a_parse_failure_with_the_reason():
    with pytest.raises(ParseError) as err:
        parse_dcgmi(read("3.3-runtime-error.txt"))
    assert "unable to establish a connection" in str(err.value)
