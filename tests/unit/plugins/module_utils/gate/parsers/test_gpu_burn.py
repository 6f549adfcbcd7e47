import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.gpu_burn import parse_gpu_burn
from tests.helpers import shared_fixture

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "gpu_burn")


def read(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_real_8xa100_doubles_tensor_cores():
    with open(shared_fixture("real-outputs", "gpu_burn_8xA100_doubles_tc.txt")) as handle:
        burn = parse_gpu_burn(handle.read())
    assert burn.tested == 8
    assert burn.ok_count() == 8
    assert burn.faulty() == ()
    assert burn.devices[7] == (7, "NVIDIA A100-SXM4-80GB")
    assert burn.errors == (0,) * 8
    assert len(burn.gflops) == 8 and min(burn.gflops) > 16000


def test_faulty_gpu_is_reported_whatever_the_exit_code():
    burn = parse_gpu_burn(read("1.1-faulty-gpu3.txt"))
    assert burn.faulty() == (3,)
    assert burn.ok_count() == 7
    assert burn.errors[3] == 16468


@pytest.mark.parametrize("text, expected", [
    ("", "the output is empty"),
    (read("1.1-killed-no-summary.txt"), "killed or crashed before the end"),
    (read("1.1-truncated-summary.txt"), "found 5 verdict line(s)"),
    (read("1.1-no-cuda.txt"), "gpu-burn reported a fatal error"),
    ("Tested 2 GPUs:\n\tGPU 0: OK\n\tGPU 1: MAYBE\n", "OK or FAULTY for GPU 1"),
    ("Tested 1 GPUs:\n\tGPU 0: OK\nSegfault in thread 2\n", '"GPU n: OK" or "GPU n: FAULTY"'),
    ("Tested 0 GPUs:\n", "one verdict per tested GPU (0)"),
])
def test_incomplete_output_fails_closed(text, expected):
    with pytest.raises(ParseError) as err:
        parse_gpu_burn(text)
    assert expected in str(err.value)
    assert err.value.tool == "gpu-burn"
