import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import NotReported, ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nvidia_smi import (
    parse_nvidia_smi_csv, parse_nvidia_smi_q)
from tests.helpers import shared_fixture

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "nvidia_smi")


def read(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def read_shared(name):
    with open(shared_fixture("real-outputs", name)) as handle:
        return handle.read()


def test_real_query_gpu_csv_8xh100():
    smi = parse_nvidia_smi_csv(read_shared("nvidia_smi_query_gpu_8xH100.csv"))
    assert smi.count() == 8
    assert smi.driver_version == "535.161.07"
    assert set(name for _i, name in smi.names()) == {"NVIDIA H100 80GB HBM3"}
    assert smi.per_gpu("ecc_uncorrected_volatile") == tuple(("GPU%d" % i, 0) for i in range(8))
    assert "power.draw.average" in smi.fields  # the unit suffix "[W]" is stripped
    with pytest.raises(NotReported) as err:
        smi.per_gpu("remap_pending")  # not queried: never read as 0
    assert "remapped_rows.pending not reported by nvidia-smi for GPU0, GPU1" in str(err.value)
    assert "Cannot parse" not in str(err.value)


def test_real_q_page_retirement_8gpu():
    smi = parse_nvidia_smi_q(read_shared("nvidia_smi_q_page_retirement_8gpu.txt"))
    assert smi.count() == 8
    assert smi.driver_version == "535.86.10"
    assert smi.per_gpu("retired_dbe") == tuple(("GPU%d" % i, 0) for i in range(8))
    assert smi.per_gpu("retired_pending") == tuple(("GPU%d" % i, False) for i in range(8))
    assert smi.gpus[7].bus_id == "00000008:00:00.0"


def test_own_csv_with_row_remap_fault():
    smi = parse_nvidia_smi_csv(read("550-csv-8xh100-remap.txt"))
    gpu5 = smi.gpus[5]
    assert (gpu5.ecc_uncorrected_volatile, gpu5.remap_uncorrectable, gpu5.remap_pending) == (4, 1, True)
    assert gpu5.remap_failure is False
    assert gpu5.retired_pending is None  # [N/A] on H100


def test_own_csv_missing_gpu_is_counted_not_hidden():
    smi = parse_nvidia_smi_csv(read("535-csv-7gpus-one-missing.txt"))
    assert smi.count() == 7
    assert smi.gpus[6].index == 6


def test_own_q_row_remapper_sums_sram_and_dram():
    smi = parse_nvidia_smi_q(read("535-q-row-remapper-2gpu.txt"))
    assert smi.per_gpu("ecc_uncorrected_volatile") == (("GPU0", 0), ("GPU1", 3))
    assert smi.per_gpu("remap_failure") == (("GPU0", False), ("GPU1", True))
    assert smi.gpus[1].name == "NVIDIA A100-SXM4-80GB"
    assert smi.gpus[0].retired_sbe is None


def test_no_devices_is_zero_gpus():
    assert parse_nvidia_smi_csv("No devices were found\n").count() == 0


@pytest.mark.parametrize("parser, text, expected", [
    (parse_nvidia_smi_csv, "", "the output is empty"),
    (parse_nvidia_smi_csv, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                           "Make sure that the latest NVIDIA driver is installed and running.\n", "reported an error"),
    (parse_nvidia_smi_csv, 'Field "ecc.bogus" is not a valid field to query.\n', "reported an error"),
    (parse_nvidia_smi_csv, "0, NVIDIA H100 80GB HBM3\n", 'naming the "index" field'),
    (parse_nvidia_smi_csv, "index, name\n0, NVIDIA H100, extra\n", "found 3"),
    (parse_nvidia_smi_csv, "index, remapped_rows.pending\n0, Maybe\n", "Yes or No"),
    (parse_nvidia_smi_csv, "index, ecc.errors.uncorrected.volatile.total\n0, many\n", "'many' is not a whole number"),
    (parse_nvidia_smi_q, "Attached GPUs : 2\nGPU 00000000:18:00.0\n    Retired Pages\n", "found 2 attached and 1"),
    (parse_nvidia_smi_q, "GPU 00000000:18:00.0\n", "found None attached"),
])
def test_malformed_output_fails_closed(parser, text, expected):
    with pytest.raises(ParseError) as err:
        parser(text)
    assert expected in str(err.value)
