"""Judging: measured values against a profile's thresholds, on hand-made and real outputs."""
import json
import os
import re

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.catalog import check_spec
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import GateError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.judging import judge
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.gpu_burn import parse_gpu_burn
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nccl import parse_nccl
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nvbandwidth import parse_nvbandwidth
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nvidia_smi import parse_nvidia_smi_csv
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nvlink import parse_nvlink_status
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.results import (
    FAIL, PASS, CheckResult, failed_closed)
from tests.helpers import ROOT
from tests.unit.plugins.module_utils.gate.gate_support import load, profile, shared_text


@pytest.mark.parametrize("check, measured, verdict, shown, reason", [
    ("gpu_count", 8, PASS, 8, "8 count as expected"),
    ("gpu_count", 7, FAIL, 7, "found 7 count, expected 8"),
    ("gpu_model", {"GPU0": "NVIDIA H100 80GB HBM3"}, PASS, "NVIDIA H100 80GB HBM3", "is allowed"),
    ("gpu_model", ["NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"], FAIL, "NVIDIA H100 80GB HBM3, NVIDIA H100 PCIe",
     '"NVIDIA H100 PCIe" on 1 is not one of'),
    ("ecc_uncorrectable", {"GPU0": 0, "GPU1": 2}, FAIL, 2, "above the limit of 0 count; offending: GPU1"),
    ("ecc_uncorrectable", {"GPU0": 0, "GPU1": 0}, PASS, 0, "<= 0 count"),
    ("row_remap_pending", {"GPU0": False, "GPU5": True}, FAIL, 1, "offending: GPU5"),
    ("xid", [13, 13, 31], PASS, (13, 31), "seen, allowed: 13, 31"),
    ("xid", (), PASS, (), "no deny-listed XID"),
    ("xid", [79, 13], FAIL, (13, 79), "deny-listed XID 79"),
    ("firmware_pins", {"BMC": "1.4.2", "BIOS": "2.10", "NIC": "28.39"}, PASS, (("BIOS", "2.10"), ("BMC", "1.4.2")),
     "all 2 components"),
    ("firmware_pins", {"BMC": "1.4.1"}, FAIL, (("BIOS", None), ("BMC", "1.4.1")),
     "BIOS is missing, pinned 2.10; BMC is 1.4.1, pinned 1.4.2"),
    ("dcgm_diag", {"memory": "pass", "pcie": "pass"}, PASS, 0, "2 test(s) ran, 0 failed"),
    ("dcgm_diag", {"memory": "pass", "pcie": "warn"}, FAIL, 1, "warning(s): pcie on (node)"),
    ("dcgm_diag", {"memory": "pass", "pcie": "fail"}, FAIL, 1, "1 test(s) failed: pcie on (node)"),
    ("dcgm_diag", {"pcie": "pass", "memory": "skip"}, FAIL, 1, "required test(s) did not run: memory"),
    ("dcgm_diag", (("memory", "GPU3", "fail"), ("memory", "GPU0", "pass")), FAIL, 1,
     "1 test(s) failed: memory on GPU3"),
    ("dcgm_diag", {}, FAIL, None, "no diagnostic test results"),
    ("nvbandwidth_d2d", {"GPU0->GPU1": 371.0, "GPU0->GPU5": 92.4}, FAIL, 92.4, "(worst: GPU0->GPU5) is below"),
    ("nvbandwidth_d2d", 371.0, PASS, 371.0, "371 GB/s >= 335 GB/s"),
    ("nccl_single_node", 0.0, FAIL, 0.0, "0 GB/s is below the floor of 460 GB/s"),
    ("ib_write_bw", {"mlx5_0": 392.9}, FAIL, 392.9, "1 of 2 expected HCAs"),
    ("ib_write_bw", {"mlx5_0": 392.9, "mlx5_1": 96.5}, FAIL, 96.5, "offending: mlx5_1"),
    ("fio_seq_read", 2500.0, PASS, 2.5, "2.5 GB/s >= 2 GB/s"),  # measured in MB/s, shown in the profile's GB/s
    ("fio_seq_read", 1999.0, FAIL, 1.999, "below the floor of 2 GB/s"),
    ("soak", {"iteration 1": 120.0, "iteration 2": 99.0}, FAIL, 99.0, "offending: iteration 2"),
    ("nvbandwidth_d2d", "fast", FAIL, None, "is not a number"),
    ("nvbandwidth_d2d", float("nan"), FAIL, None, "is not a number"),
    ("nvbandwidth_d2d", {}, FAIL, None, "is not a number"),
    ("gpu_count", None, FAIL, None, "nothing was measured"),
])
def test_judge(check, measured, verdict, shown, reason):
    result = judge(check, measured, profile())
    assert isinstance(result, CheckResult)
    assert (result.verdict, result.name) == (verdict, check)
    assert result.phase == check_spec(check).phase
    assert result.measured == (pytest.approx(shown) if isinstance(shown, float) else shown)
    assert reason in result.reason
    assert result.unit == profile().threshold(check).unit


def test_judge_reports_per_item_values_and_extra_details():
    result = judge("ib_write_bw", {"mlx5_1": 96.5, "mlx5_0": 392.9}, profile(), (("server", "n1"),))
    assert result.details[0] == ("server", "n1")
    assert dict(result.details)["values"] == (("mlx5_0", 392.9), ("mlx5_1", 96.5))
    report = result.to_dict()
    assert report["details"]["values"] == {"mlx5_0": 392.9, "mlx5_1": 96.5}
    assert json.dumps(report)


def test_unknown_check_in_profile_is_a_gate_error():
    with pytest.raises(GateError) as err:
        judge("nccl_multi_node", 300.0, profile())
    assert 'has no "nccl_multi_node" check' in str(err.value)


def test_check_result_invariants():
    with pytest.raises(ValueError):
        CheckResult("x", "gpu", 1, 1, "count", "maybe", "r")
    with pytest.raises(ValueError):
        CheckResult("x", "gpu", None, 1, "count", PASS, "r")
    closed = failed_closed("dcgm_diag", "gpu", "dcgmi is not installed", unit="tests")
    assert (closed.verdict, closed.measured, closed.passed) == (FAIL, None, False)


def test_real_healthy_h100_node_passes_the_h100_profile():
    h100 = load("h100-sxm-8x")
    smi = parse_nvidia_smi_csv(shared_text("nvidia_smi_query_gpu_8xH100.csv"))
    assert judge("gpu_count", smi.count(), h100).passed
    assert judge("gpu_model", dict(smi.names()), h100).passed
    assert judge("ecc_uncorrectable", dict(smi.per_gpu("ecc_uncorrected_volatile")), h100).passed
    d2d = parse_nvbandwidth(shared_text("nvbandwidth_d2d_read_8xH100_v0.4.txt")).testcase(
        "device_to_device_memcpy_read_ce")
    assert judge("nvbandwidth_d2d", dict(d2d.values), h100).passed
    # AzNHC health.log of a passing ND H100 v5 node: NCCL 480.318 GB/s, ib_write_bw GDR per HCA in Gbps.
    log = shared_text("aznhc_health_log_nd96isr_h100_v5_pass.txt")
    nccl = float(re.search(r"test passed, ([0-9.]+) GB/s", log).group(1))
    hcas = dict(re.findall(r"IB=(\S+), IB BW=([0-9.]+) Gbps", log))
    assert judge("nccl_single_node", nccl, h100).passed
    assert judge("ib_write_bw", dict((k, float(v)) for k, v in hcas.items()), h100).passed
    assert len(hcas) == 8


def test_real_a100_outputs_against_the_a100_profile():
    a100 = load("a100-sxm-8x")
    nccl = parse_nccl(shared_text("nccl_all_reduce_8xA100_legacy_format.txt"))
    size = a100.threshold("nccl_single_node").param("message_size")
    assert judge("nccl_single_node", nccl.busbw_at(size), a100).passed
    footer = judge("nccl_single_node", nccl.avg_busbw, a100)  # why checks never read the footer average
    assert not footer.passed
    burn = parse_gpu_burn(shared_text("gpu_burn_8xA100_doubles_tc.txt"))
    assert judge("gpu_burn", burn.ok_count(), a100).passed
    good = parse_nvlink_status(shared_text("nvidia_smi_nvlink_status_8xA100_good.txt"))
    bad = parse_nvlink_status(shared_text("nvidia_smi_nvlink_status_8xA100_bad.txt"))
    assert judge("nvlink_links", dict(good.active_links()), a100).passed
    assert "offending: GPU6" in judge("nvlink_links", dict(bad.active_links()), a100).reason
    legacy = parse_nvbandwidth(shared_text("nvbandwidth_readme_d2d_write_8gpu_legacy.txt"))
    case = legacy.testcase("device_to_device_memcpy_write_ce")
    assert judge("nvbandwidth_d2d", dict(case.values), a100).passed


def test_lab_hardware_model_meets_the_lab_profile():
    with open(os.path.join(ROOT, "lab", "hwsim", "models", "healthy.json")) as handle:
        model = json.load(handle)
    lab = load("lab")
    nv, nccl = model["nvlink"], model["nccl"]
    assert judge("gpu_count", model["gpus"]["count"], lab).passed
    assert judge("gpu_model", model["gpus"]["model"], lab).passed
    assert judge("nvlink_links", nv["links"], lab).passed
    for check, key in (("nvbandwidth_d2d", "d2d_gbps"), ("nvbandwidth_h2d", "h2d_gbps"),
                       ("nvbandwidth_d2h", "d2h_gbps")):
        assert judge(check, nv[key] - 0.3, lab).passed, check  # the shim prints up to 0.26 below the model
    assert judge("nccl_single_node", nccl["single_node_busbw_gbps"], lab).passed
    assert judge("nccl_multi_node", nccl["multi_node_busbw_gbps"], lab).passed
    assert judge("ib_write_bw", dict((h["name"], h["bw_gbps"]) for h in model["hcas"]), lab).passed
    # the injected slow HCA and degraded NVLink (lab/hwsim/models/all-faults.json) fail
    assert not judge("ib_write_bw", {"mlx5_1": 96.5}, lab).passed
    assert not judge("nvbandwidth_d2d", nv["d2d_gbps"] * 0.25, lab).passed
