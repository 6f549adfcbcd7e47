import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nvbandwidth import parse_nvbandwidth
from tests.helpers import shared_fixture

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "nvbandwidth")
D2D_READ = "device_to_device_memcpy_read_ce"


def read(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def read_shared(name):
    with open(shared_fixture("real-outputs", name)) as handle:
        return handle.read()


def test_real_v04_text_8xh100():
    result = parse_nvbandwidth(read_shared("nvbandwidth_d2d_read_8xH100_v0.4.txt"))
    case = result.testcase(D2D_READ)
    assert (result.version, result.driver_version) == ("v0.4", "570.133.20")
    assert len(case.values) == 56  # 8x8 without the N/A diagonal
    assert case.minimum() == 370.26
    assert dict(case.values)["GPU2->GPU4"] == 372.96
    assert case.total == 20785.58
    assert case.unit == "GB/s"


def test_real_legacy_readme_zero_diagonal_is_not_a_measurement():
    result = parse_nvbandwidth(read_shared("nvbandwidth_readme_d2d_write_8gpu_legacy.txt"))
    case = result.testcase("device_to_device_memcpy_write_ce")
    assert len(case.values) == 56
    assert case.minimum() == 274.89
    assert case.total is None
    assert "GPU6<-GPU0" in dict(case.values)


@pytest.mark.parametrize("name", ["nvbandwidth_1gpu_v0.5_dcgm_fixture.json", "nvbandwidth_json_with_leading_warnings.txt"])
def test_real_v05_json_single_gpu(name):
    result = parse_nvbandwidth(read_shared(name))
    assert (result.version, result.driver_version) == ("v0.5", "565.02")
    assert result.testcase("host_to_device_memcpy_ce").values == (("GPU0", 12.3964),)
    assert result.testcase("device_to_host_memcpy_ce").minimum() == 13.2001
    with pytest.raises(ParseError) as err:
        result.testcase(D2D_READ)
    assert "waived" in str(err.value)


def test_own_h2d_d2h_text():
    result = parse_nvbandwidth(read("0.6-h2d-d2h-8xh200.txt"))
    h2d = result.testcase("host_to_device_memcpy_ce")
    assert len(h2d.values) == 8
    assert h2d.minimum() == 55.17
    assert result.testcase("device_to_host_memcpy_ce").minimum() == 55.57


def test_own_degraded_pair_is_reported_not_judged():
    case = parse_nvbandwidth(read("0.6-d2d-degraded-gpu5.txt")).testcase(D2D_READ)
    slow = sorted(label for label, value in case.values if value < 100)
    assert len(slow) == 14 and "GPU5->GPU0" in slow and "GPU0->GPU5" in slow


def test_own_json_with_na_diagonal():
    result = parse_nvbandwidth(read("0.6-json-8xh200.txt"))
    case = result.testcase("device_to_device_memcpy_write_ce")
    assert len(case.values) == 56
    with pytest.raises(ParseError) as err:
        result.testcase("device_to_device_bidirectional_memcpy_read_ce")
    assert "not found" in str(err.value)


@pytest.mark.parametrize("text, expected, line_no", [
    ("", "the output is empty", None),
    ("nvbandwidth: command not found\n", "no testcase was found", None),
    (read("0.6-error-no-peer.txt"), "nvbandwidth reported an error", 21),
    ("Running host_to_device_memcpy_ce.\nmemcpy CE CPU(row) -> GPU(column) bandwidth\n", "(GB/s)", 2),
    ("Running host_to_device_memcpy_ce.\nmemcpy (GB/s)\n   0   1\n0  55.1\n", "a row label and 2 values", 4),
    ("Running host_to_device_memcpy_ce.\nmemcpy (GB/s)\n   0   1\n0  55.1  fast\n", "'fast' is not a number", 4),
    ("Running host_to_device_memcpy_ce.\nmemcpy (GB/s)\n   GPU0\n", "a header of GPU indexes", 3),
    ("Running host_to_device_memcpy_ce.\nmemcpy (GB/s)\n", "the section has no matrix", 1),
    ('WARNING: x\n{"nvbandwidth": {"testcases": []}}', "testcases is empty", None),
    ('{"nvbandwidth": {"testcases": [{"name": "h2d", "status": "Passed"}]}}', "bandwidth_matrix", None),
    ('{"other": {}}', '"/nvbandwidth"', None),
])
def test_malformed_output_fails_closed(text, expected, line_no):
    with pytest.raises(ParseError) as err:
        parse_nvbandwidth(text)
    assert expected in str(err.value)
    assert err.value.line_no == line_no


def test_missing_testcase_lists_what_ran():
    with pytest.raises(ParseError) as err:
        parse_nvbandwidth(read("0.6-h2d-d2h-8xh200.txt")).testcase(D2D_READ)
    assert "host_to_device_memcpy_ce, device_to_host_memcpy_ce" in str(err.value)
