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


# ---- clock-event reasons, counters, SM clocks and fabric (both driver generations) ----

IDLE_REASONS = (("gpu_idle", True),) + tuple((name, False) for name in (
    "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "sync_boost", "sw_thermal_slowdown",
    "hw_thermal_slowdown", "hw_power_brake_slowdown", "display_clock_setting"))


def test_real_q_driver580_clock_event_reasons_and_counters():
    gpu = parse_nvidia_smi_q(read_shared("nvidia_smi_q_perf_ecc_1xH100_driver580_idle.txt")).gpus[0]
    assert gpu.clock_reasons == IDLE_REASONS
    assert gpu.clock_counters == (("sw_power_cap", 0), ("sync_boost", 0), ("sw_thermal_slowdown", 0),
                                  ("hw_thermal_slowdown", 0), ("hw_power_brake_slowdown", 0))
    assert (gpu.sm_clock_mhz, gpu.sm_clock_max_mhz) == (345, 1980)
    assert (gpu.ecc_uncorrected_volatile, gpu.ecc_corrected_volatile) == (0, 0)
    assert (gpu.remap_pending, gpu.remap_failure) == (False, False)
    assert (gpu.fabric_state, gpu.fabric_status) == (None, None)  # -d PERFORMANCE,...: no Fabric section


def test_real_csv_driver580_clocks_event_reasons_fields():
    gpu = parse_nvidia_smi_csv(read_shared("nvidia_smi_query_clocks_events_1xH100_driver580_idle.csv")).gpus[0]
    assert gpu.clock_reasons == IDLE_REASONS  # from clocks_event_reasons.active = 0x1
    assert (gpu.sm_clock_mhz, gpu.sm_clock_max_mhz, gpu.ecc_corrected_volatile) == (345, 1980, 0)


def test_real_q_driver525_clocks_throttle_reasons_8xa100():
    smi = parse_nvidia_smi_q(read("525-q-excerpt-8xa100-throttle-reasons.txt"))
    assert smi.count() == 8 and smi.driver_version == "525.60.13"
    gpu = smi.gpus[0]
    assert dict(gpu.clock_reasons)["gpu_idle"] is False and not any(dict(gpu.clock_reasons).values())
    assert gpu.clock_counters is None  # no counters section in this driver's report: never read as 0
    assert (gpu.sm_clock_mhz, gpu.sm_clock_max_mhz) == (1155, 1410)
    assert (gpu.fabric_state, gpu.fabric_status) == (None, None)  # A100 reports State N/A


@pytest.mark.parametrize("prefix", ["clocks_event_reasons", "clocks_throttle_reasons"])
def test_csv_reason_fields_of_both_generations_read_alike(prefix):
    text = ("index, {0}.sw_power_cap, {0}.hw_thermal_slowdown, clocks.sm [MHz]\n"
            "0, Active, Not Active, 1410 MHz\n").format(prefix)
    gpu = parse_nvidia_smi_csv(text).gpus[0]
    assert gpu.clock_reasons == (("sw_power_cap", True), ("hw_thermal_slowdown", False))
    assert gpu.sm_clock_mhz == 1410


@pytest.mark.parametrize("text, expected", [
    ("index, clocks_event_reasons.active\n0, 0xZZ\n", "a hexadecimal reason mask"),
    ("index, clocks_throttle_reasons.hw_slowdown\n0, Yes\n", '"Active" or "Not Active"'),
    ("index, clocks.sm [MHz]\n0, fast\n", "a clock in MHz"),
])
def test_bad_clock_fields_fail_closed(text, expected):
    with pytest.raises(ParseError) as err:
        parse_nvidia_smi_csv(text)
    assert expected in str(err.value)


def test_bad_counter_in_q_text_fails_closed():
    text = read_shared("nvidia_smi_q_perf_ecc_1xH100_driver580_idle.txt").replace(
        "SW Power Capping                               : 0 us", "SW Power Capping                               : 12 s")
    with pytest.raises(ParseError) as err:
        parse_nvidia_smi_q(text)
    assert 'a counter in microseconds ("<n> us")' in str(err.value) and "line" in str(err.value)
