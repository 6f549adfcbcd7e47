import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nvlink import parse_nvlink_status
from tests.helpers import shared_fixture

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "nvidia_smi")


def read_shared(name):
    with open(shared_fixture("real-outputs", name)) as handle:
        return handle.read()


def test_real_good_a100_twelve_links():
    status = parse_nvlink_status(read_shared("nvidia_smi_nvlink_status_8xA100_good.txt"))
    assert status.active_links() == (("GPU7", 12),)
    assert {speed for _l, speed in status.link_speeds()} == {25.0}
    assert status.gpus[0].name == "NVIDIA A100-SXM4-80GB"


def test_real_bad_all_links_inactive_is_zero_links():
    status = parse_nvlink_status(read_shared("nvidia_smi_nvlink_status_8xA100_bad.txt"))
    assert status.active_links() == (("GPU6", 0),)


def test_own_partially_down_links():
    with open(os.path.join(FIXTURES, "550-nvlink-status-8xh100-gpu2-4-down.txt")) as handle:
        status = parse_nvlink_status(handle.read())
    links = dict(status.active_links())
    assert links["GPU2"] == 14 and links["GPU0"] == 18 and len(links) == 8
    assert min(speed for _l, speed in status.link_speeds()) == 26.562


@pytest.mark.parametrize("text, expected, line_no", [
    ("", "the output is empty", None),
    ("\t Link 0: 25 GB/s\n", "before link lines", 1),
    ("GPU 0: NVIDIA A100 (UUID: GPU-1)\n\t Link 0: fast\n", "a link speed in GB/s", 2),
    ("GPU 0: NVIDIA A100 (UUID: GPU-1)\nFailed to initialize NVML: Driver/library version mismatch\n",
     '"Link <n>: <speed> GB/s"', 2),
])
def test_malformed_output_fails_closed(text, expected, line_no):
    with pytest.raises(ParseError) as err:
        parse_nvlink_status(text)
    assert expected in str(err.value)
    assert err.value.line_no == line_no
