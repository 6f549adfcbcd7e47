"""From saved tool output to verdicts: DCGM skip/warn/fail, nccl sizes and MPI, nvidia-smi formats and N/A.

Each test feeds a fixture (hand-made beside the tests, or a real capture from ../shared, skipped
when absent) through the probe's extractor and the judge, against the shipped H100 profile.
"""
import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.phases import GateContext, judge_probe
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.probes import probe_by_name
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.profile import profile_from_dict
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.report import build_report, text_table
from tests.unit.plugins.module_utils.gate.gate_support import load, shared_text

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def fixture(*parts):
    with open(os.path.join(FIX, *parts)) as handle:
        return handle.read()


def run(probe_name, text, prof=None):
    """{check: CheckResult} for the probe's checks in the profile (H100 by default)."""
    prof = prof or load("h100-sxm-8x")
    probe = probe_by_name(probe_name)
    checks = tuple(c for c in probe.checks if prof.has(c))
    return dict((r.name, r) for r in judge_probe(probe, checks, {"": text}, GateContext(prof)))


def table(result):
    outcome = {"phases": [{"name": result.phase, "results": [result], "verdict": result.verdict}],
               "verdict": result.verdict, "failed_phase": result.phase, "failed_check": result.name,
               "reason": "phase %s failed" % result.phase}
    return text_table(build_report(outcome, {"report_id": "r", "node": "n"}))


# --- 5/6: DCGM diagnostics -------------------------------------------------------------------

def test_dcgm_healthy_run_passes():
    result = run("dcgm_diag", fixture("dcgmi", "4.1-pass-8gpu.txt"))["dcgm_diag"]
    assert result.passed, result.reason


def test_dcgm_all_skipped_fails_and_names_gpus_and_tests():
    result = run("dcgm_diag", fixture("dcgmi", "4.1-all-skip-8gpu.txt"))["dcgm_diag"]
    assert not result.passed
    assert "no test passed" in result.reason
    assert "required test(s) did not run: pcie, memory, diagnostic" in result.reason
    assert "skipped: diagnostic on GPU0, GPU1" in result.reason


def test_dcgm_warning_fails_by_default_and_names_gpu_and_test():
    text = fixture("dcgmi", "4.1-warn-pcie-gpu5.txt")
    result = run("dcgm_diag", text)["dcgm_diag"]
    assert not result.passed
    assert "warning(s): pcie on GPU5" in result.reason and "allow_warnings: [pcie]" in result.reason
    assert any("PCIe link width x8" in w for w in dict(result.details)["warnings"])


def test_dcgm_warning_allowed_by_name_passes():
    h100 = load("h100-sxm-8x")
    spec = dict((k, v) for k, v in h100.threshold("dcgm_diag").params)
    data = {"profile": "p", "checks": {"dcgm_diag": {
        "level": 3, "unit": "tests", "required": list(spec["required"]), "allow_warnings": ["PCIe"]}}}
    result = run("dcgm_diag", fixture("dcgmi", "4.1-warn-pcie-gpu5.txt"), profile_from_dict(data, "p"))["dcgm_diag"]
    assert result.passed, result.reason


def test_dcgm_failure_names_gpu_and_test_in_reason_and_table():
    result = run("dcgm_diag", fixture("dcgmi", "4.1-fail-diagnostic-gpu2.txt"))["dcgm_diag"]
    assert result.reason == "dcgm_diag: 1 test(s) failed: diagnostic on GPU2"
    assert "dcgm_diag: 1 test(s) failed: diagnostic on GPU2" in table(result)


def test_dcgm_memory_failure_fixture():
    result = run("dcgm_diag", fixture("dcgmi", "4.1-fail-memory-gpu3.txt"))["dcgm_diag"]
    assert "1 test(s) failed: memory on GPU3" in result.reason


def test_real_dcgm3_level3_passes_with_eud_skip_allowed_and_fails_when_all_skip():
    text = shared_text("dcgmi_diag_r3_dcgm3x_1gpu.json")
    assert run("dcgm_diag", text)["dcgm_diag"].passed  # "EUD Test" skipped: the profile allows it
    every_skip = text.replace('"Pass"', '"Skip"')
    result = run("dcgm_diag", every_skip)["dcgm_diag"]
    assert not result.passed and "Denylist on (node)" in result.reason and "Diagnostic on GPU0" in result.reason


# --- 7/8: nccl-tests -------------------------------------------------------------------------

def nccl_profile(**params):
    spec = dict({"min": 460, "unit": "GB/s", "message_size": "16G"}, **params)
    return profile_from_dict({"profile": "p", "checks": {"nccl_single_node": spec}}, "p")


@pytest.mark.parametrize("name", ["2.14-nonmpi-busbw-zero.txt", "2.14-headerless-nonmpi-busbw-zero.txt"])
def test_nccl_without_mpi_fails_with_the_reason_with_or_without_header(name):
    result = run("nccl_single_node", fixture("nccl", name), nccl_profile(message_size="8G"))["nccl_single_node"]
    assert not result.passed and result.measured == 0.0
    assert "nccl-tests built without MPI" in result.reason and "MPI=1" in result.reason


def test_nccl_headerless_job_log_is_judged():
    result = run("nccl_single_node", fixture("nccl", "2.14-headerless-job-log-8xh100.txt"),
                 nccl_profile(message_size="8G"))["nccl_single_node"]
    assert result.passed and result.measured == 481.57


def test_nccl_capture_that_ends_below_the_profile_size_fails_without_min_message_size():
    result = run("nccl_single_node", fixture("nccl", "2.14-sweep-to-2g-8xh100.txt"), nccl_profile())
    reason = result["nccl_single_node"].reason
    assert "at or above 17179869184 bytes" in reason and "ends at 2147483648" in reason
    assert "min_message_size" in reason


@pytest.mark.parametrize("name, size, busbw, verdict", [
    ("2.14-sweep-to-2g-8xh100.txt", 2147483648, 480.28, "pass"),    # another site's shorter sweep
    ("2.14-pass-8xh100-single-node.txt", 8589934592, 481.57, "pass"),  # the largest size counts
])
def test_nccl_judges_the_largest_size_at_or_above_min_message_size(name, size, busbw, verdict):
    result = run("nccl_single_node", fixture("nccl", name), nccl_profile(min_message_size="1G"))["nccl_single_node"]
    assert (result.verdict, result.measured, dict(result.details)["message_size"]) == (verdict, busbw, size)


def test_nccl_min_message_size_above_every_row_fails_closed():
    result = run("nccl_single_node", fixture("nccl", "2.14-sweep-to-2g-8xh100.txt"),
                 nccl_profile(min_message_size="4G"))["nccl_single_node"]
    assert not result.passed and result.measured is None and "4294967296" in result.reason


def test_shipped_h100_profile_judges_a_2g_capture():
    h100 = load("h100-sxm-8x")
    assert h100.threshold("nccl_single_node").param("message_size") == 16 * 1024 ** 3
    result = run("nccl_single_node", fixture("nccl", "2.14-sweep-to-2g-8xh100.txt"), h100)["nccl_single_node"]
    assert result.passed and dict(result.details)["message_size"] == 2147483648


def test_nccl_single_rank_fails_as_one_rank_not_as_a_build_without_mpi():
    """nccl-tests 2.19, one process, -g 1: busbw is 0 by definition, whatever the build."""
    result = run("nccl_single_node", fixture("nccl", "2.19-single-rank-1xh100.txt"))["nccl_single_node"]
    assert not result.passed and result.measured == 0.0
    assert "a single rank" in result.reason and "busbw = algbw x 2(n-1)/n" in result.reason
    assert "-g 8, the profile's GPU count" in result.reason  # the H100 profile's gpu_count
    assert "MPI" not in result.reason


def test_nccl_single_rank_on_the_multi_node_check_asks_for_one_rank_per_gpu():
    checks = {"nccl_multi_node": {"min": 340, "unit": "GB/s", "message_size": "8G"}}
    prof = profile_from_dict({"profile": "p", "checks": checks}, "p")
    result = run("nccl_multi_node", fixture("nccl", "2.19-single-rank-1xh100.txt"), prof)["nccl_multi_node"]
    assert not result.passed and "one rank per GPU on every node" in result.reason


def test_nccl_interleaved_processes_without_mpi_name_the_build():
    text = fixture("nccl", "2.19-nonmpi-mpirun-4proc-interleaved.txt")
    result = run("nccl_single_node", text, nccl_profile(message_size="8G"))["nccl_single_node"]
    assert not result.passed and result.measured is None
    assert result.reason.startswith("nccl_single_node: 4 processes each ran as rank 0 of 1: ")
    assert "nccl-tests built without MPI (MPI=1) was launched under mpirun" in result.reason
    assert "rebuild nccl-tests with MPI=1" in result.reason and "run one process with -g" in result.reason
    assert "Cannot parse" not in result.reason


# --- 9: nvidia-smi formats and N/A ------------------------------------------------------------

@pytest.mark.parametrize("name", ["550-xml-8xh100-healthy.txt", "550-csv-8xh100-remap.txt"])
def test_nvidia_smi_xml_and_csv_feed_the_same_checks(name):
    results = run("nvidia_smi_query", fixture("nvidia_smi", name))
    assert results["gpu_count"].passed and results["gpu_model"].passed and results["ecc_uncorrectable"].measured >= 0


def test_nvidia_smi_xml_failure_names_the_gpu():
    results = run("nvidia_smi_query", fixture("nvidia_smi", "550-xml-8xh100-remap-pending-gpu6.txt"))
    assert not results["row_remap_pending"].passed and "GPU6" in results["row_remap_pending"].reason


def test_nvidia_smi_q_text_report_is_read():
    text = shared_text("nvidia_smi_q_page_retirement_8gpu.txt")
    profile = profile_from_dict({"profile": "p", "checks": {"retired_pages_pending": {"max": 0, "unit": "gpus"}}},
                                "p")
    assert run("nvidia_smi_query", text, profile)["retired_pages_pending"].verdict in ("pass", "fail")


@pytest.mark.parametrize("name", ["550-csv-8xh100-mig-gpu0-3-na.txt", "550-xml-8xh100-mig-gpu0-3-na.txt"])
def test_mig_na_rows_say_not_reported(name):
    results = run("nvidia_smi_query", fixture("nvidia_smi", name))
    assert results["gpu_count"].passed and results["gpu_model"].passed  # neighbours are unaffected
    for check in ("ecc_uncorrectable", "row_remap_pending", "row_remap_failures"):
        reason = results[check].reason
        assert not results[check].passed and results[check].measured is None
        assert "not reported by nvidia-smi for GPU0, GPU1, GPU2, GPU3" in reason, reason
        assert "Cannot parse" not in reason and "ran to completion" not in reason
        assert "MIG" in reason


# --- NVLink: nothing printed ----------------------------------------------------------------

@pytest.mark.parametrize("text", ["", "\n", "  \n\n"])
def test_nvlink_status_printing_nothing_is_no_links_reported(text):
    result = run("nvidia_smi_nvlink", text)["nvlink_links"]
    assert not result.passed and result.measured == 0
    assert result.reason.startswith("nvlink_links: no NVLink links reported: ")
    assert "no NVLink or their links are down or disabled" in result.reason and "at least 18 links" in result.reason
