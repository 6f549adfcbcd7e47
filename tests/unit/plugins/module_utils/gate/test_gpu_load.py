"""Clock events during gpu-burn, error counters across the soak and the NVSwitch fabric (gpu_load.py).

The "before" reports are real captures (one H100 80GB HBM3 at idle, driver 580; 8x A100 SXM4,
driver 525). "After" reports are derived from them by changing counter lines, and say which.
"""
import os
import re

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate import gpu_load, measure
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.phases import GateContext, run_gate
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.profile import profile_from_dict
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.runner import MISSING, ToolRun
from tests.unit.plugins.module_utils.gate.gate_support import shared_text

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
CLOCKS = {"max": 0, "unit": "us"}
SOAK = {"max": 0, "max_correctable": 2, "unit": "count"}
FABRIC = {"min": 8, "unit": "gpus"}
BURN_OK = "Tested 1 GPUs:\n\tGPU 0: OK\n"
DMESG = "[    5.031337] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.159.04\n"
# Samples as ``--query-gpu=index,clocks.sm,clocks_event_reasons.active --format=csv -lms 500`` prints them.
POWER_CAPPED = ("index, clocks.sm [MHz], clocks_event_reasons.active\n"
                "0, 1380 MHz, 0x0000000000000004\n0, 1440 MHz, 0x0000000000000004\n")


def fixture(name):
    with open(os.path.join(FIXTURES, "nvidia_smi", name)) as handle:
        return handle.read()


def idle_h100():
    return shared_text("nvidia_smi_q_perf_ecc_1xH100_driver580_idle.txt")


def derived(text, **lines):
    """The capture with ``<label> : <value>`` lines changed (label spaces as underscores), first match
    each; a value ending in " us" changes the line of the clock-event counters section."""
    for label, value in lines.items():
        pattern = r"(?m)^(\s+%s\s+: ).*$" % re.escape(label.replace("_", " "))
        start = text.index("Clocks Event Reasons Counters") if value.endswith(" us") else 0
        tail, count = re.subn(pattern, lambda m, v=value: m.group(1) + v, text[start:], count=1)
        assert count == 1, label
        text = text[:start] + tail
    return text


def context(**checks):
    return GateContext(profile_from_dict({"checks": dict({"gpu_burn": {"min": 1, "unit": "gpus"}}, **checks)}, "t"))


def burn_texts(after=None, samples=POWER_CAPPED):
    return {"": BURN_OK, "clocks_before": idle_h100(), "clocks_samples": samples,
            "clocks_after": after if after is not None else derived(idle_h100(), SW_Power_Capping="152620013 us")}


def test_healthy_h100_power_capped_under_load_passes_and_reports_the_cap():
    # after: the SW power cap counter a real H100 reached in 150 s of gpu-burn, thermal counters 0
    result = measure.gpu_burn(burn_texts(), context(clock_events=dict(CLOCKS, min_sm_clock_mhz=1300)))["clock_events"]
    assert result.verdict == "pass", result.reason
    assert "SW power cap (reported, not judged): GPU0: SW power cap 152620013 us" in result.reason
    assert "mean SM clock under load: GPU0 1410 MHz" in result.reason
    assert dict(result.details)["reason_us"] == (("GPU0", (("hw_power_brake_slowdown", 0), ("hw_slowdown", 0),
                                                           ("hw_thermal_slowdown", 0), ("sw_power_cap", 152620013),
                                                           ("sw_thermal_slowdown", 0))),)


@pytest.mark.parametrize("line, value, reason", [
    ("HW_Thermal_Slowdown", "4000000 us", "HW thermal slowdown 4000000 us"),
    ("SW_Thermal_Slowdown", "250 us", "SW thermal slowdown 250 us"),
    ("HW_Power_Braking", "1000000 us", "HW power brake 1000000 us"),
])
def test_slowdown_counters_during_the_burn_fail_naming_gpu_and_reason(line, value, reason):
    after = derived(idle_h100(), **{line: value})
    result = measure.gpu_burn(burn_texts(after), context(clock_events=CLOCKS))["clock_events"]
    assert result.verdict == "fail"
    assert "offending: GPU0; during gpu-burn GPU0: %s" % reason in result.reason


def test_hw_slowdown_has_no_counter_and_is_timed_from_the_samples():
    samples = "index, clocks.sm [MHz], clocks_event_reasons.active\n0, 705 MHz, 0x0000000000000008\n"
    result = measure.gpu_burn(burn_texts(samples=samples), context(clock_events=CLOCKS))["clock_events"]
    assert result.verdict == "fail" and "GPU0: HW slowdown 500000 us" in result.reason


def test_a_limit_above_the_slowdown_passes():
    after = derived(idle_h100(), HW_Thermal_Slowdown="300 us")
    assert measure.gpu_burn(burn_texts(after), context(clock_events={"max": 1000, "unit": "us"}))["clock_events"].passed


def test_sustained_clock_floor():
    samples = "index, clocks.sm [MHz], clocks_event_reasons.active\n0, 1100 MHz, 0x0000000000000004\n"
    result = measure.gpu_burn(burn_texts(samples=samples), context(clock_events=dict(CLOCKS, min_sm_clock_mhz=1300)))
    assert result["clock_events"].verdict == "fail"
    assert "mean SM clock under load below the floor of 1300 MHz: GPU0 1100 MHz" in result["clock_events"].reason


def test_a_gpu_seen_only_idle_fails_closed():
    samples = "index, clocks.sm [MHz], clocks_event_reasons.active\n0, 345 MHz, 0x0000000000000001\n"
    result = measure.gpu_burn(burn_texts(samples=samples), context(clock_events=CLOCKS))["clock_events"]
    assert result.verdict == "fail" and "no sample shows GPU0 under load" in result.reason


def test_idle_samples_do_not_count_as_load_and_a_cut_last_line_is_dropped():
    samples = POWER_CAPPED + "0, 345 MHz, 0x0000000000000001\n0, 14"
    result = measure.gpu_burn(burn_texts(samples=samples), context(clock_events=CLOCKS))["clock_events"]
    assert result.passed and dict(result.details)["loaded_samples"] == (("GPU0", 2),)


@pytest.mark.parametrize("texts, why", [
    ({"clocks_samples": ""}, "the sampler printed nothing"),
    ({"clocks_after": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"},
     "nvidia-smi reported an error"),
    ({"clocks_after": idle_h100().replace("HW Power Braking                               : 0 us",
                                          "HW Power Braking                               : 4 ms")},
     "a counter in microseconds"),
    ({"clocks_samples": "index, clocks.sm [MHz], clocks_event_reasons.active\n0, 1410 MHz, 0xZZ\n"},
     "a hexadecimal reason mask"),
    # a counter that went down (driver reloaded, GPU reset) hides the window: never read as 0
    ({"clocks_before": derived(idle_h100(), HW_Thermal_Slowdown="5000 us")},
     "GPU0's hw_thermal_slowdown time went down from 5000 to 0"),
])
def test_unreadable_clock_output_fails_closed_and_keeps_the_burn_verdict(texts, why):
    results = measure.gpu_burn(dict(burn_texts(), **texts), context(clock_events=CLOCKS))
    assert results["clock_events"].verdict == "fail" and results["clock_events"].measured is None
    assert why in results["clock_events"].reason
    assert results["gpu_burn"].passed


def test_older_drivers_without_counters_are_timed_from_samples():
    # real 8x A100 driver 525 capture: "Clocks Throttle Reasons", no counters section
    a100 = fixture("525-q-excerpt-8xa100-throttle-reasons.txt")
    rows = "".join("%d, 1410 MHz, 0x0000000000000000\n" % i for i in range(8))
    samples = "index, clocks.sm [MHz], clocks_throttle_reasons.active\n" + rows
    result = measure.gpu_burn({"": BURN_OK, "clocks_before": a100, "clocks_after": a100, "clocks_samples": samples},
                              context(clock_events=CLOCKS))["clock_events"]
    assert result.passed, result.reason


def test_a_gpu_without_counters_or_samples_fails_closed():
    a100 = fixture("525-q-excerpt-8xa100-throttle-reasons.txt")
    samples = "index, clocks.sm [MHz], clocks_event_reasons.active\n0, 1410 MHz, 0x0000000000000000\n"
    result = measure.gpu_burn({"": BURN_OK, "clocks_before": a100, "clocks_after": a100, "clocks_samples": samples},
                              context(clock_events=CLOCKS))["clock_events"]
    assert result.verdict == "fail" and "no sample shows GPU1, GPU2" in result.reason


def test_reason_times_prefers_counters_and_falls_back_to_samples():
    before = {"GPU0": {"hw_thermal_slowdown": 10, "sw_power_cap": 0}}
    after = {"GPU0": {"hw_thermal_slowdown": 25, "sw_power_cap": 7}}
    samples = {"GPU0": [(1400, {"hw_slowdown": True, "sw_thermal_slowdown": True})]}
    times = gpu_load.reason_times(before, after, samples, 500000)["GPU0"]
    assert times["hw_thermal_slowdown"] == 15 and times["sw_power_cap"] == 7
    assert times["hw_slowdown"] == times["sw_thermal_slowdown"] == 500000 and times["hw_power_brake_slowdown"] == 0


# ---- across the soak ----

def soak_texts(after=None, after_dmesg=DMESG):
    return {"before_smi": idle_h100(), "before_dmesg": DMESG, "after_smi": after or idle_h100(),
            "after_dmesg": after_dmesg}


def test_clean_soak_passes_and_reports_before_after_and_difference():
    result = gpu_load.soak_errors(soak_texts(), context(soak_errors=SOAK))["soak_errors"]
    assert result.passed, result.reason
    table = dict(dict(result.details)["counters_before_after_diff"])["GPU0"]
    assert dict(table)["uncorrected"] == (0, 0, 0) and dict(table)["remap_failure"] == (False, False, None)


@pytest.mark.parametrize("after, dmesg, fragment", [
    (derived(idle_h100(), DRAM_Uncorrectable="1"), DMESG,
     "offending: GPU0 (uncorrectable ECC errors gained from before the GPU phase to after the soak)"),
    (derived(idle_h100(), DRAM_Correctable="3"), DMESG, "corrected ECC errors gained above 2 per GPU: GPU0 +3"),
    (derived(idle_h100(), Remapping_Failure_Occurred="Yes"), DMESG,
     "1 GPU(s) with a row-remap failure after the soak (allowed 0): GPU0"),
    (idle_h100().replace("Pending                                        : No\n        Remapping",
                         "Pending                                        : Yes\n        Remapping"), DMESG,
     "1 GPU(s) with a pending row remap after the soak (allowed 0): GPU0"),
    (None, DMESG + "[ 9312.101010] NVRM: Xid (PCI:0000:00:06): 48, pid=1234, name=gpu_burn, An uncorrectable "
                   "double bit error (DBE) has been detected on GPU in the framebuffer at partition 0.\n",
     "1 XID(s) logged since the GPU phase began (allowed 0): PCI 0000:00:06: XID 48"),
])
def test_errors_gained_across_the_soak_fail(after, dmesg, fragment):
    result = gpu_load.soak_errors(soak_texts(after, dmesg), context(soak_errors=SOAK))["soak_errors"]
    assert result.verdict == "fail" and fragment in result.reason


def test_slowdown_across_the_soak_is_judged_by_clock_events_limit():
    after = derived(idle_h100(), SW_Thermal_Slowdown="9000 us")
    result = gpu_load.soak_errors(soak_texts(after), context(soak_errors=SOAK, clock_events=CLOCKS))["soak_errors"]
    assert result.verdict == "fail" and "slowdown above clock_events' limit of 0 us: GPU0: SW thermal" in result.reason


@pytest.mark.parametrize("texts, why", [
    ({"after_smi": derived(idle_h100(), SRAM_Correctable="N/A", DRAM_Correctable="N/A")},
     "GPU0 does not report corrected"),
    ({"after_smi": ""}, "the output is empty"),
    ({"after_dmesg": "dmesg: read kernel buffer failed: Operation not permitted\n"}, "the log could not be read"),
    ({"before_smi": derived(idle_h100(), DRAM_Correctable="4")},
     "GPU0's corrected volatile ECC count went down from 4 to 0: the driver was reloaded"),
    ({"before_smi": derived(idle_h100(), DRAM_Uncorrectable="1")}, "GPU0's uncorrected volatile ECC count went down"),
])
def test_unreadable_soak_counters_fail_closed(texts, why):
    ctx = GateContext(profile_from_dict({"checks": {"soak_errors": SOAK}}, "t"))
    probe = [p for p in __import__("ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.probes",
                                   fromlist=["PROBES"]).PROBES if p.name == "soak_errors"][0]
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.phases import judge_probe
    result = judge_probe(probe, ("soak_errors",), dict(soak_texts(), **texts), ctx)[0]
    assert result.verdict == "fail" and result.measured is None and why in result.reason


# ---- NVSwitch fabric ----

def fabric_report(states):
    """The driver 580 capture's header with one section per GPU carrying a Fabric block (see SOURCES.md)."""
    head = "Driver Version : 580.159.04\nAttached GPUs : %d\n" % len(states)
    body = "".join("GPU 00000000:%02X:00.0\n    Fabric\n        State : %s\n        Status : %s\n"
                   % (0x18 + i, s, t) for i, (s, t) in enumerate(states))
    return head + body


def test_fabric_completed_on_every_gpu_with_the_manager_active_passes():
    texts = {"nvidia_smi": fabric_report([("Completed", "Success")] * 8), "fabricmanager": "active\n"}
    result = gpu_load.nvswitch_fabric(texts, context(nvswitch_fabric=FABRIC))["nvswitch_fabric"]
    assert result.passed and dict(result.details)["fabricmanager"] == "active"


def test_a_gpu_still_in_progress_fails_naming_it():
    states = [("Completed", "Success")] * 7 + [("In Progress", "N/A")]
    texts = {"nvidia_smi": fabric_report(states), "fabricmanager": "active\n"}
    result = gpu_load.nvswitch_fabric(texts, context(nvswitch_fabric=FABRIC))["nvswitch_fabric"]
    assert result.verdict == "fail" and "not in the fabric: GPU7 In Progress/N/A" in result.reason


@pytest.mark.parametrize("word", ["inactive", "failed"])
def test_fabric_manager_not_active_fails(word):
    texts = {"nvidia_smi": fabric_report([("Completed", "Success")] * 8), "fabricmanager": word + "\n"}
    result = gpu_load.nvswitch_fabric(texts, context(nvswitch_fabric=FABRIC))["nvswitch_fabric"]
    assert result.verdict == "fail" and "nvidia-fabricmanager is %s, not active" % word in result.reason


def test_fabric_manager_not_asked_when_the_profile_says_so():
    texts = {"nvidia_smi": fabric_report([("Completed", "Success")] * 8)}
    ctx = context(nvswitch_fabric=dict(FABRIC, fabric_manager=False))
    assert gpu_load.nvswitch_fabric(texts, ctx)["nvswitch_fabric"].passed


def test_no_fabric_state_is_not_an_hgx_board():
    # real 8x A100 capture (Fabric State N/A) and the real one-GPU H100 capture (no Fabric section)
    for text, expected in ((fixture("525-q-excerpt-8xa100-throttle-reasons.txt"), "this is not an NVSwitch (HGX/DGX)"),
                           (idle_h100(), "this is not an NVSwitch (HGX/DGX)")):
        texts = {"nvidia_smi": text, "fabricmanager": "active\n"}
        result = gpu_load.nvswitch_fabric(texts, context(nvswitch_fabric=FABRIC))["nvswitch_fabric"]
        assert result.verdict == "fail" and expected in result.reason


def test_unreadable_fabric_manager_answer_fails_closed():
    texts = {"nvidia_smi": fabric_report([("Completed", "Success")] * 8), "fabricmanager": ""}
    with pytest.raises(Exception) as err:
        gpu_load.nvswitch_fabric(texts, context(nvswitch_fabric=FABRIC))
    assert "systemctl is-active" in str(err.value)


# ---- collection ----

class Runner:
    """Serves text per probe key; ``run_sampled`` answers the burn and the sampler."""

    def __init__(self, outputs):
        self.outputs, self.calls = outputs, []

    def run(self, probe, tool, args, timeout):
        self.calls.append((probe, tool, list(args)))
        text = self.outputs.get(probe)
        if text is None:
            return ToolRun(probe, [tool], None, "", "", 0.0, MISSING, "%s: tool %s was not found" % (probe, tool))
        return ToolRun(probe, [tool] + list(args), 0, text, "", 0.1, None, "")

    def run_sampled(self, probe, tool, args, timeout, sampler, sampler_args, sampler_probe):
        return self.run(probe, tool, args, timeout), self.run(sampler_probe, sampler, sampler_args, timeout)


def test_the_baseline_is_read_before_the_gpu_phase_and_compared_after_the_soak():
    outputs = {"soak_errors.before_smi": idle_h100(), "soak_errors.before_dmesg": DMESG,
               "soak_errors.after_smi": derived(idle_h100(), DRAM_Uncorrectable="2"), "soak_errors.after_dmesg": DMESG,
               "gpu_burn": BURN_OK, "gpu_burn.clocks_before": idle_h100(), "gpu_burn.clocks_samples": POWER_CAPPED,
               "gpu_burn.clocks_after": idle_h100()}
    runner = Runner(outputs)
    profile = profile_from_dict({"checks": {"gpu_burn": {"min": 1, "unit": "gpus"}, "clock_events": CLOCKS,
                                            "soak_errors": SOAK}}, "t")
    saved = {}
    ctx = GateContext(profile, runner=runner, raw_sink=lambda key, out, err: saved.setdefault(key, out) and key)
    outcome = run_gate(ctx, ["gpu", "soak"])
    order = [probe for probe, _tool, _args in runner.calls]
    assert order[:2] == ["soak_errors.before_smi", "soak_errors.before_dmesg"] and order.index("gpu_burn") > 1
    assert order[-2:] == ["soak_errors.after_smi", "soak_errors.after_dmesg"]
    assert (outcome["failed_check"], outcome["verdict"]) == ("soak_errors", "fail")
    assert "soak_errors.before_smi" in saved and "gpu_burn.clocks_samples" in saved


def test_without_clock_events_the_burn_runs_alone():
    runner = Runner({"gpu_burn": BURN_OK})
    ctx = GateContext(profile_from_dict({"checks": {"gpu_burn": {"min": 1, "unit": "gpus"}}}, "t"), runner=runner)
    outcome = run_gate(ctx, ["gpu"])
    assert outcome["verdict"] == "pass" and [c[0] for c in runner.calls] == ["gpu_burn"]


def test_saved_xml_reports_are_judged_alike():
    # real A10G -q -x capture (driver 515, clocks_throttle_reasons): a clean window passes
    xml = fixture("515-xml-excerpt-1xa10g-throttle-reasons.txt")
    texts = {"before_smi": xml, "before_dmesg": DMESG, "after_smi": xml, "after_dmesg": DMESG}
    assert gpu_load.soak_errors(texts, context(soak_errors=SOAK))["soak_errors"].passed
    fabric = gpu_load.nvswitch_fabric({"nvidia_smi": xml, "fabricmanager": "active\n"},
                                      context(nvswitch_fabric={"min": 1, "unit": "gpus"}))["nvswitch_fabric"]
    assert fabric.verdict == "fail" and "not an NVSwitch (HGX/DGX) board" in fabric.reason
