"""Phases: order, stop at the first failure, fail closed, retries, attestation, soak.

Tools never run: a fake runner serves fixture text (the gate-parsers fixtures beside these
tests, the shared real outputs when present, and small inline samples).
"""
import json
import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate import phases
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.phases import GateContext, plan, run_gate
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.runner import MISSING, TIMEOUT, ToolRun
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.profile import profile_from_dict
from tests.helpers import shared_fixture

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def fixture(*parts):
    with open(os.path.join(FIX, *parts)) as handle:
        return handle.read()


def csv(gpus=8, ecc=0):
    head = "index, name, pci.bus_id, driver_version, ecc.errors.uncorrected.volatile.total, retired_pages.sbe, " \
           "retired_pages.dbe, retired_pages.pending, remapped_rows.pending, remapped_rows.failure"
    row = "%d, NVIDIA H100 80GB HBM3, 00000000:%02X:00.0, 550.54.15, %d, 0, 0, No, No, No"
    rows = [row % (i, 0x18 + i, ecc if i == 0 else 0) for i in range(gpus)]
    return "\n".join([head] + rows) + "\n"


BURN_OK = "GPU 0: NVIDIA H100\n\nTested 8 GPUs:\n" + "".join("\tGPU %d: OK\n" % i for i in range(8))
RELEASE = 'NAME="gpufleet"\nVERSION="2026.06.2"\nBUILD_ID="b42"\nPINS_SHA256="abc"\n'

PROFILE = {
    "profile": "unit", "checks": {
        "firmware_pins": {"pins": {"BMC": "1.2.3", "BIOS": "2.0"}, "unit": "version"},
        "gpu_count": {"equals": 8, "unit": "count"},
        "gpu_model": {"one_of": ["NVIDIA H100 80GB HBM3"], "unit": "name"},
        "ecc_uncorrectable": {"max": 0, "unit": "count"},
        "xid": {"deny": [48, 79], "unit": "xid"},
        "gpu_burn": {"min": 8, "unit": "gpus", "duration_s": 30},
        "nvbandwidth_d2d": {"min": 300, "unit": "GB/s", "retries": 2},
        "nccl_single_node": {"min": 400, "unit": "GB/s", "message_size": "8G", "retries": 1},
        "fio_seq_read": {"min": 50, "unit": "MB/s", "size": "32M", "runtime_s": 1},
    }}
FIRMWARE = [{"id": "BMC", "name": "BMC Firmware", "version": "1.2.3", "updateable": True},
            {"id": "BIOS", "name": "System BIOS", "version": "2.0", "updateable": True}]


class FakeRunner:
    """Serves outputs by probe key; a list gives one answer per attempt; a ToolRun is returned as is."""

    def __init__(self, outputs):
        self.outputs = dict(outputs)
        self.calls = []

    def _answer(self, probe, argv):
        self.calls.append((probe, argv))
        answer = self.outputs.get(probe)
        if isinstance(answer, list):
            answer = answer.pop(0) if len(answer) > 1 else answer[0]
        if answer is None:
            return ToolRun(probe, argv, None, "", "", 0.0, MISSING, "%s: tool was not found" % probe)
        if isinstance(answer, ToolRun):
            return answer
        return ToolRun(probe, argv, 0, answer, "", 0.1, None, "")

    def run(self, probe, tool, args, timeout):
        return self._answer(probe, [tool] + list(args))

    def run_pair(self, probe, tool, server_args, client_args, timeout, settle=1.0):
        return self._answer(probe, [tool] + list(client_args))


def healthy(tmp_path):
    release = tmp_path / "image-release"
    release.write_text(RELEASE)
    outputs = {"nvidia_smi_query": csv(), "dmesg": fixture("dmesg", "550-clean-boot.txt"), "gpu_burn": BURN_OK,
               "nvbandwidth_d2d": shared_text("nvbandwidth_d2d_read_8xH100_v0.4.txt"),
               "nccl_single_node": fixture("nccl", "2.14-pass-8xh100-single-node.txt"),
               "fio_seq_read": fixture("fio", "3.33-seq-read-1job-tmpfs.txt")}
    options = {"expected_release": {"VERSION": "2026.06.2", "BUILD_ID": "b42", "PINS_SHA256": "abc"},
               "image_release_path": str(release), "firmware_inventory": FIRMWARE,
               "storage_dir": str(tmp_path / "fio")}
    return outputs, options


def shared_text(name):
    with open(shared_fixture("real-outputs", name)) as handle:
        return handle.read()


def gate(outputs, options, profile=None, **kwargs):
    saved = {}
    ctx = GateContext(profile_from_dict(profile or PROFILE, "unit"), runner=FakeRunner(outputs), options=options,
                      raw_sink=lambda key, out, err: saved.setdefault(key, out) and "raw/%s.txt" % key)
    return run_gate(ctx, **kwargs), ctx.runner, saved


def verdicts(outcome):
    return dict((r.name, r.verdict) for p in outcome["phases"] for r in p["results"])


def test_plan_orders_phases_and_probes_cheapest_first():
    order = [(phase, [p.name for p, _c in probes]) for phase, probes in plan(profile_from_dict(PROFILE, "unit"))]
    assert [p for p, _probes in order] == list(phases.GATE_PHASES)      # health runs only when chosen
    assert order[0][1] == ["image_release", "firmware"]
    assert order[1][1] == ["nvidia_smi_query", "dmesg", "gpu_burn"]
    assert order[2][1] == ["nvbandwidth_d2d", "nccl_single_node"]
    with pytest.raises(Exception, match="Unknown gate phase"):
        plan(profile_from_dict(PROFILE, "unit"), ["gpu", "warp"])


def test_healthy_node_passes_every_check(tmp_path):
    outputs, options = healthy(tmp_path)
    outcome, runner, saved = gate(outputs, options)
    assert outcome["verdict"] == "pass", outcome["reason"]
    assert set(verdicts(outcome).values()) == {"pass"}
    assert len(verdicts(outcome)) == 10
    assert saved["image_release"] == RELEASE and json.loads(saved["firmware"])[0]["id"] == "BMC"
    args = dict(runner.calls)
    assert args["nccl_single_node"][:7] == ["all_reduce_perf", "-b", "1073741824", "-e", "8589934592", "-f", "2"]
    assert args["gpu_burn"] == ["gpu_burn", "30"]


@pytest.mark.parametrize("probe,text,phase,check,fragment", [
    ("nvidia_smi_query", csv(gpus=7), "gpu", "gpu_count", "found 7 count, expected 8"),
    ("nvidia_smi_query", csv(ecc=3), "gpu", "ecc_uncorrectable", "offending: GPU0"),
    ("dmesg", fixture("dmesg", "550-xid-79-and-48.txt"), "gpu", "xid", "deny-listed XID 48"),
    ("gpu_burn", fixture("gpu_burn", "1.1-faulty-gpu3.txt"), "gpu", "gpu_burn", "FAULTY: GPU 3"),
    ("gpu_burn", fixture("gpu_burn", "1.1-killed-no-summary.txt"), "gpu", "gpu_burn", "Tested N GPUs"),
    ("nvbandwidth_d2d", fixture("nvbandwidth", "0.6-d2d-degraded-gpu5.txt"), "nvlink", "nvbandwidth_d2d",
     "below the floor"),
    ("nccl_single_node", fixture("nccl", "2.14-fail-wrong-values.txt"), "nvlink", "nccl_single_node", ""),
    ("fio_seq_read", fixture("fio", "3.33-error-enospc.txt"), "storage", "fio_seq_read", "fio"),
])
def test_each_fault_fails_its_phase_and_stops(tmp_path, probe, text, phase, check, fragment):
    outputs, options = healthy(tmp_path)
    outputs[probe] = text
    outcome, _runner, _saved = gate(outputs, options)
    assert (outcome["verdict"], outcome["failed_phase"], outcome["failed_check"]) == ("fail", phase, check)
    assert fragment in outcome["reason"]
    later = phases.PHASES[phases.PHASES.index(phase) + 1:]
    skipped = [r for p in outcome["phases"] if p["name"] in later for r in p["results"]]
    assert skipped or phase == "storage"  # nothing after storage in this profile
    assert all(r.verdict == "skip" for r in skipped)


def test_run_all_keeps_going_after_a_failure(tmp_path):
    outputs, options = healthy(tmp_path)
    outputs["nvidia_smi_query"] = csv(gpus=7)
    outcome, _runner, _saved = gate(outputs, options, run_all=True)
    assert outcome["failed_check"] == "gpu_count"
    assert "skip" not in verdicts(outcome).values() and verdicts(outcome)["fio_seq_read"] == "pass"


@pytest.mark.parametrize("answer,fragment", [
    (None, "tool was not found"),
    (ToolRun("gpu_burn", ["gpu_burn"], None, "", "", 5.0, TIMEOUT, "gpu_burn: gpu_burn did not finish within 5s"),
     "did not finish"),
    (ToolRun("gpu_burn", ["gpu_burn"], 0, "", "", 1.0, "empty", "gpu_burn: gpu_burn exited 0 with no output"),
     "no output"),
])
def test_missing_tool_timeout_and_empty_output_fail_closed(tmp_path, answer, fragment):
    outputs, options = healthy(tmp_path)
    outputs["gpu_burn"] = answer
    outcome, _runner, _saved = gate(outputs, options)
    burn = [r for p in outcome["phases"] for r in p["results"] if r.name == "gpu_burn"][0]
    assert burn.verdict == "fail" and burn.measured is None and fragment in burn.reason
    assert burn.threshold == 8 and burn.unit == "gpus"
    assert ("gpu_burn" in _saved) == (answer is not None)  # a tool that never started leaves no raw file


@pytest.mark.parametrize("rc, fragment", [
    (0, "nvlink_links: no NVLink links reported: nvidia-smi nvlink --status printed nothing"),
    (9, "nvidia-smi exited 9 with no output"),  # a failed nvidia-smi stays a failed run
])
def test_nvlink_status_printing_nothing_is_judged_as_no_links(tmp_path, rc, fragment):
    outputs, options = healthy(tmp_path)
    outputs["nvidia_smi_nvlink"] = ToolRun("nvidia_smi_nvlink", ["nvidia-smi", "nvlink", "--status"], rc, "", "",
                                           0.1, "empty", "nvidia_smi_nvlink: nvidia-smi exited %d with no output" % rc)
    profile = dict(PROFILE, checks=dict(PROFILE["checks"], nvlink_links={"min": 18, "unit": "links"}))
    outcome, _runner, _saved = gate(outputs, options, profile, run_all=True)
    links = [r for p in outcome["phases"] for r in p["results"] if r.name == "nvlink_links"][0]
    assert links.verdict == "fail" and fragment in links.reason and "exited 0" not in links.reason


def test_nonzero_exit_fails_closed_except_where_the_output_is_the_verdict(tmp_path):
    outputs, options = healthy(tmp_path)
    outputs["nccl_single_node"] = ToolRun("nccl_single_node", [], 1, fixture(
        "nccl", "2.14-pass-8xh100-single-node.txt"), "MPI abort", 1.0, None, "")
    outputs["gpu_burn"] = ToolRun("gpu_burn", [], 1, BURN_OK, "", 1.0, None, "")
    outcome, _runner, _saved = gate(outputs, options, run_all=True)
    assert verdicts(outcome)["gpu_burn"] == "pass"
    assert outcome["failed_check"] == "nccl_single_node" and "exited with status 1: MPI abort" in outcome["reason"]


def test_bandwidth_probe_retries_up_to_the_profile_limit(tmp_path):
    outputs, options = healthy(tmp_path)
    good = outputs["nvbandwidth_d2d"]
    bad = fixture("nvbandwidth", "0.6-d2d-degraded-gpu5.txt")
    outputs["nvbandwidth_d2d"] = [bad, good]
    outcome, runner, _saved = gate(outputs, options)
    assert outcome["verdict"] == "pass"
    nvlink = [p for p in outcome["phases"] if p["name"] == "nvlink"][0]
    assert nvlink["extra"]["nvbandwidth_d2d"]["attempts"] == 2
    outputs["nvbandwidth_d2d"] = [bad]
    outcome, runner, _saved = gate(outputs, options)
    assert outcome["failed_check"] == "nvbandwidth_d2d"
    assert [p for p, _a in runner.calls].count("nvbandwidth_d2d") == 3  # 1 + retries: 2


def test_non_bandwidth_checks_never_retry(tmp_path):
    outputs, options = healthy(tmp_path)
    outputs["gpu_burn"] = fixture("gpu_burn", "1.1-faulty-gpu3.txt")
    _outcome, runner, _saved = gate(outputs, options)
    assert [p for p, _a in runner.calls].count("gpu_burn") == 1


@pytest.mark.parametrize("change,fragment", [
    ({"expected_release": {"VERSION": "2026.07.1", "BUILD_ID": "b42"}}, "VERSION is 2026.06.2, expected 2026.07.1"),
    ({"expected_release": None}, "no expected VERSION"),
    ({"image_release_path": "/nonexistent/image-release"}, "cannot read /nonexistent/image-release"),
    ({"firmware_inventory": None}, "no firmware inventory"),
    ({"firmware_inventory": [{"id": "BMC", "version": "1.2.2"}, {"id": "BIOS", "version": "2.0"}]},
     "BMC is 1.2.2, pinned 1.2.3"),
])
def test_attestation_failures(tmp_path, change, fragment):
    outputs, options = healthy(tmp_path)
    options.update(change)
    outcome, runner, _saved = gate(outputs, options)
    assert outcome["failed_phase"] == "attestation" and fragment in outcome["reason"]
    assert not runner.calls  # nothing on the GPU side ran


def test_image_release_without_required_keys_fails(tmp_path):
    outputs, options = healthy(tmp_path)
    (tmp_path / "image-release").write_text('VERSION="2026.06.2"\n')
    outcome, _runner, _saved = gate(outputs, options)
    assert outcome["failed_check"] == "image_release" and "BUILD_ID, PINS_SHA256" in outcome["reason"]


def test_profile_check_without_a_probe_fails_closed(tmp_path, monkeypatch):
    outputs, options = healthy(tmp_path)
    monkeypatch.setattr(phases, "PROBES", tuple(p for p in phases.PROBES if p.name != "dmesg"))
    outcome, _runner, _saved = gate(outputs, options, phases=["gpu"])
    assert outcome["failed_check"] == "xid" and "no probe" in outcome["reason"]
    outputs["nvidia_smi_query"] = csv(gpus=7)
    outcome, _runner, _saved = gate(outputs, options, phases=["gpu"])
    assert outcome["failed_check"] == "gpu_count" and verdicts(outcome)["xid"] == "skip"


def test_no_check_selected_is_a_failure(tmp_path):
    outputs, options = healthy(tmp_path)
    outcome, _runner, _saved = gate(outputs, options, phases=["soak"])
    assert outcome["verdict"] == "fail" and "no check ran" in outcome["reason"]


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        self.now += 10.0
        return self.now


@pytest.mark.parametrize("answers,verdict,iterations,fragment", [
    (["step 1\nsamples_per_s: 120.5\n"], "pass", 5, "samples_per_s"),  # the fake clock ticks 10 s a read
    (["samples_per_s: 120\n", "samples_per_s=80\n"], "fail", 2, "below the floor"),
    (["samples_per_s: 120\n", ToolRun("soak", [], 3, "oops\n", "", 1.0, None, "")], "fail", 2, "exited 3"),
    (["no metric here\n"], "fail", 1, "samples_per_s: <number>"),
])
def test_soak_runs_until_duration_and_stops_early(answers, verdict, iterations, fragment):
    profile = {"profile": "soak", "checks": {"soak": {"min": 100, "unit": "samples/s", "metric": "samples_per_s",
                                                      "command": "python3 train.py", "duration_s": 50}}}
    ctx = GateContext(profile_from_dict(profile, "soak"), runner=FakeRunner({"soak": answers}), clock=Clock())
    outcome = run_gate(ctx, phases=["soak"])
    soak = outcome["phases"][-1]["results"][0]
    assert soak.verdict == verdict, soak.reason
    assert len(ctx.runner.calls) == iterations and ctx.runner.calls[0][1] == ["sh", "-c", "python3 train.py"]
    assert verdict == "pass" or fragment in soak.reason


def test_skip_checks_waives_named_checks_and_rejects_unknown_names(tmp_path):
    outputs, options = healthy(tmp_path)
    outputs["gpu_burn"] = fixture("gpu_burn", "1.1-faulty-gpu3.txt")
    options["skip_checks"] = ["gpu_burn", "xid"]
    outcome, runner, _saved = gate(outputs, options)
    assert outcome["verdict"] == "pass"
    waived = [r for p in outcome["phases"] for r in p["results"] if r.name in ("gpu_burn", "xid")]
    assert [r.verdict for r in waived] == ["skip", "skip"] and "waived by the caller" in waived[0].reason
    assert "gpu_burn" not in dict(runner.calls) and "dmesg" not in dict(runner.calls)
    options["skip_checks"] = ["gpu_brun"]
    with pytest.raises(Exception, match="skip_checks names gpu_brun"):
        gate(outputs, options)


def test_multi_node_check_without_peers_fails_closed_with_the_fix(tmp_path):
    profile = {"profile": "unit", "checks": {"nccl_multi_node": {"min": 300, "unit": "GB/s", "nodes": 2}}}
    outcome, runner, _saved = gate({}, {}, profile=profile, phases=["fabric"])
    assert outcome["failed_check"] == "nccl_multi_node" and "skip_checks: [nccl_multi_node]" in outcome["reason"]
    outcome, runner, _saved = gate({}, {"peers": ["b", "c"]}, profile=profile, phases=["fabric"])
    assert "wants a set of 2 nodes" in outcome["reason"] and not runner.calls
    outputs = {"nccl_multi_node": fixture("nccl", "2.14-pass-16xh100-two-nodes.txt")}
    outcome, runner, _saved = gate(outputs, {"peers": ["b"], "node": "a"}, profile=profile, phases=["fabric"])
    assert outcome["verdict"] == "pass", outcome["reason"]
    argv = runner.calls[0][1]
    assert argv[:6] == ["mpirun", "--allow-run-as-root", "-H", "a:8,b:8", "-np", "16"]
    assert argv[6:9] == ["all_reduce_perf", "-b", "1073741824"] and argv[-2:] == ["-g", "1"]


HEALTH = dict(PROFILE, checks=dict(PROFILE["checks"], dcgm_diag={
    "level": 3, "max_failures": 0, "required": ["memory"], "unit": "tests"}),
    health={"checks": ["xid", "ecc_uncorrectable", "dcgm_diag"]})


def test_health_phase_runs_only_its_fast_checks_with_dcgm_level_1(tmp_path):
    outputs, options = healthy(tmp_path)
    outputs["dcgm_diag"] = fixture("dcgmi", "4.1-pass-8gpu.txt")
    outcome, runner, _saved = gate(outputs, options, profile=HEALTH, phases=["health"])
    assert outcome["verdict"] == "pass", outcome["reason"]
    assert [p["name"] for p in outcome["phases"]] == ["health"]
    assert verdicts(outcome) == {"ecc_uncorrectable": "pass", "xid": "pass", "dcgm_diag": "pass"}
    argv = dict(runner.calls)["dcgm_diag"]
    assert argv[argv.index("-r") + 1] == "1"
    assert "gpu_burn" not in dict(runner.calls)           # never a load test on a node in service


def test_health_phase_fails_closed_on_a_missing_tool_and_on_a_fault(tmp_path):
    outputs, options = healthy(tmp_path)
    outcome, _r, _s = gate(outputs, options, profile=HEALTH, phases=["health"])   # no dcgmi answer
    assert outcome["verdict"] == "fail" and verdicts(outcome)["dcgm_diag"] == "fail"
    outputs["dcgm_diag"] = fixture("dcgmi", "4.1-pass-8gpu.txt")
    outputs["nvidia_smi_query"] = csv(ecc=2)
    outcome, _r, _s = gate(outputs, options, profile=HEALTH, phases=["health"], run_all=True)
    assert [r.name for p in outcome["phases"] for r in p["results"] if r.verdict == "fail"] == ["ecc_uncorrectable"]


def test_a_profile_without_health_cannot_run_the_health_phase(tmp_path):
    outputs, options = healthy(tmp_path)
    with pytest.raises(Exception, match="no health section"):
        gate(outputs, options, phases=["health"])
