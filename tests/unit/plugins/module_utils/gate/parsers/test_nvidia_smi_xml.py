import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nvidia_smi_xml import parse_nvidia_smi_xml

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "nvidia_smi")


def read(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_healthy_h100_r550_schema():
    smi = parse_nvidia_smi_xml(read("550-xml-8xh100-healthy.txt"))
    assert smi.count() == 8
    assert smi.driver_version == "550.54.15"
    assert smi.per_gpu("ecc_uncorrected_volatile") == tuple(("GPU%d" % i, 0) for i in range(8))
    assert smi.per_gpu("remap_pending") == tuple(("GPU%d" % i, False) for i in range(8))
    assert smi.gpus[0].retired_dbe is None  # N/A: Hopper has no page retirement
    assert smi.gpus[3].bus_id == "00000000:5D:00.0"


def test_pending_row_remap_on_one_gpu():
    smi = parse_nvidia_smi_xml(read("550-xml-8xh100-remap-pending-gpu6.txt"))
    gpu6 = smi.gpus[6]
    assert (gpu6.ecc_uncorrected_volatile, gpu6.remap_uncorrectable, gpu6.remap_pending) == (2, 1, True)
    assert [g.index for g in smi.gpus if g.remap_pending] == [6]


def test_legacy_r470_double_bit_and_page_blacklist():
    smi = parse_nvidia_smi_xml(read("470-xml-4xv100-dbe-gpu1.txt"))
    assert smi.count() == 4
    assert smi.per_gpu("ecc_uncorrected_volatile") == (("GPU0", 0), ("GPU1", 1), ("GPU2", 0), ("GPU3", 0))
    assert smi.per_gpu("retired_pending") == (("GPU0", False), ("GPU1", True), ("GPU2", False), ("GPU3", False))
    assert smi.gpus[1].remap_pending is None


@pytest.mark.parametrize("text, expected", [
    ("", "the output is empty"),
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", "<nvidia_smi_log>"),
    ("<nvidia_smi_log><attached_gpus>1</attached_gpus><gpu id='0'>", "well-formed XML"),
    ("<nvidia_smi_log><attached_gpus>2</attached_gpus><gpu id='0'/></nvidia_smi_log>", "attached_gpus is 2 but 1"),
    ("<nvidia_smi_log><attached_gpus>eight</attached_gpus></nvidia_smi_log>", "found 'eight'"),
    ("<nvidia_smi_log><attached_gpus>1</attached_gpus><gpu><remapped_rows><remapped_row_pending>Later"
     "</remapped_row_pending></remapped_rows></gpu></nvidia_smi_log>", "Yes or No"),
])
def test_malformed_xml_fails_closed(text, expected):
    with pytest.raises(ParseError) as err:
        parse_nvidia_smi_xml(text)
    assert expected in str(err.value)


# ---- clock-event reasons, counters, SM clocks and fabric in -q -x (real captures, see SOURCES.md) ----

def test_real_xml_driver515_clocks_throttle_reasons():
    gpu = parse_nvidia_smi_xml(read("515-xml-excerpt-1xa10g-throttle-reasons.txt")).gpus[0]
    reasons = dict(gpu.clock_reasons)
    assert reasons["gpu_idle"] is True and reasons["display_clock_setting"] is False and len(reasons) == 9
    assert gpu.clock_counters is None and (gpu.fabric_state, gpu.fabric_status) == (None, None)
    assert gpu.ecc_corrected_volatile == 0


def test_real_xml_driver595_clock_event_counters():
    gpu = parse_nvidia_smi_xml(read("595-xml-excerpt-1xrtx3080-event-counters.txt")).gpus[0]
    assert dict(gpu.clock_counters) == {"sw_power_cap": 0, "sync_boost": 0, "sw_thermal_slowdown": 0,
                                        "hw_thermal_slowdown": 0, "hw_power_brake_slowdown": 0}
    assert dict(gpu.clock_reasons)["sw_power_cap"] is False
    assert gpu.sm_clock_mhz is not None and gpu.sm_clock_max_mhz >= gpu.sm_clock_mhz


def test_bad_xml_counter_fails_closed():
    text = read("595-xml-excerpt-1xrtx3080-event-counters.txt").replace(
        "<clocks_event_reasons_counters_hw_power_brake>0 us<", "<clocks_event_reasons_counters_hw_power_brake>0 s<")
    with pytest.raises(ParseError) as err:
        parse_nvidia_smi_xml(text)
    assert "a counter in microseconds" in str(err.value)
