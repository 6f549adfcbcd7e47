"""The lab's hardware shims print what the gate's parsers read, with the model's values and faults.

Runs the shims as processes (python3 stdlib only, isolated mode) and parses their output
with the same parsers the gate uses on real hardware.
"""
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.dcgmi import parse_dcgmi
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.gpu_burn import parse_gpu_burn
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.kernel_log import parse_kernel_log
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nccl import parse_nccl
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nvbandwidth import parse_nvbandwidth
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nvidia_smi import (
    parse_nvidia_smi_csv, parse_nvidia_smi_q)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nvlink import parse_nvlink_status
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.perftest import parse_perftest
from tests.helpers import ROOT

pytestmark = pytest.mark.integration

HWSIM = os.path.join(ROOT, "lab", "hwsim")


def model(tmp_path, node="lab-node-01", faults=()):
    with open(os.path.join(HWSIM, "models", "healthy.json")) as handle:
        data = json.load(handle)
    data.update(node=node, faults=list(faults))
    path = tmp_path / ("%s.json" % node)
    path.write_text(json.dumps(data))
    return str(path)


def shim(model_path, tool, *args, fleet=None, rc=0):
    env = {"PATH": os.path.join(HWSIM, "bin") + os.pathsep + "/usr/bin:/bin", "GPUFLEET_HWSIM_MODEL": model_path,
           "GPUFLEET_HWSIM_STATE": model_path + ".state"}
    if fleet:
        env["GPUFLEET_HWSIM_FLEET_DIR"] = fleet
    proc = subprocess.run([os.path.join(HWSIM, "bin", tool)] + list(args), capture_output=True, text=True, env=env,
                          timeout=30, check=False)
    assert proc.returncode == rc, proc.stderr
    return proc.stdout + proc.stderr


FIELDS = "--query-gpu=index,name,pci.bus_id,driver_version,ecc.errors.uncorrected.volatile.total,retired_pages.sbe," \
         "retired_pages.dbe,retired_pages.pending,remapped_rows.pending,remapped_rows.failure"


def test_healthy_model_reads_as_a_healthy_h100_node(tmp_path):
    path = model(tmp_path)
    gpus = parse_nvidia_smi_csv(shim(path, "nvidia-smi", FIELDS, "--format=csv"))
    assert gpus.count() == 8 and gpus.names()[0][1] == "NVIDIA H100 80GB HBM3"
    assert dict(gpus.per_gpu("ecc_uncorrected_volatile"))["GPU7"] == 0
    assert min(n for _g, n in parse_nvlink_status(shim(path, "nvidia-smi", "nvlink", "--status")).active_links()) == 18
    assert parse_dcgmi(shim(path, "dcgmi", "diag", "-r", "3", "-j")).failures() == ()
    assert parse_gpu_burn(shim(path, "gpu_burn", "30")).ok_count() == 8
    d2d = parse_nvbandwidth(shim(path, "nvbandwidth", "-t", "device_to_device_memcpy_read_ce"))
    assert d2d.testcase("device_to_device_memcpy_read_ce").minimum() > 370
    nccl = parse_nccl(shim(path, "all_reduce_perf", "-b", "1G", "-e", "8G", "-f", "2", "-g", "8"))
    assert nccl.table_format == "current" and nccl.nranks == 8 and 470 < nccl.busbw_at(8 * 1024 ** 3) < 481
    assert parse_perftest(shim(path, "ib_write_bw", "-d", "mlx5_0", "--report_gbits", "localhost")).average_gbps() \
        == pytest.approx(392.9)
    assert parse_kernel_log(shim(path, "dmesg")).codes() == ()


def test_faults_show_up_where_real_hardware_shows_them(tmp_path):
    path = model(tmp_path, faults=[{"type": "missing_gpu", "gpu": 7}, {"type": "faulty_gpu", "gpu": 3},
                                   {"type": "xid", "gpu": 1, "xid": 79}, {"type": "ecc", "gpu": 0, "uncorrected": 2},
                                   {"type": "degraded_nvlink", "gpu": 2, "factor": 0.25},
                                   {"type": "slow_hca", "hca": "mlx5_1", "bw_gbps": 96.5}])
    gpus = parse_nvidia_smi_csv(shim(path, "nvidia-smi", FIELDS, "--format=csv"))
    assert gpus.count() == 7 and dict(gpus.per_gpu("ecc_uncorrected_volatile"))["GPU0"] == 2
    assert dict(parse_nvlink_status(shim(path, "nvidia-smi", "nvlink", "--status")).active_links())["GPU2"] == 4
    assert parse_gpu_burn(shim(path, "gpu_burn", "30")).faulty() == (3,)
    log = parse_kernel_log(shim(path, "dmesg"))
    assert log.codes() == (79,) and list(log.by_gpu()) == ["0000:28:00"]
    diag = parse_dcgmi(shim(path, "dcgmi", "diag", "-r", "1", "-j", rc=226))
    assert [r.test for r in diag.failures()] == ["Page Retirement/Row Remap"]
    d2d = parse_nvbandwidth(shim(path, "nvbandwidth", "-t", "device_to_device_memcpy_read_ce"))
    worst = min(d2d.testcase("device_to_device_memcpy_read_ce").values, key=lambda kv: kv[1])
    assert "GPU2" in worst[0] and worst[1] < 100
    slow = parse_perftest(shim(path, "ib_write_bw", "-d", "mlx5_1", "--report_gbits", "localhost"))
    assert slow.average_gbps() == pytest.approx(96.5)
    assert "invalid device ordinal" in shim(path, "all_reduce_perf", "-g", "8", rc=2)


def test_clock_events_and_errors_under_load(tmp_path):
    """Power-capped when healthy; thermal_slowdown accrues during gpu-burn; ecc_under_load after NCCL."""
    path = model(tmp_path, faults=[{"type": "thermal_slowdown", "gpu": 3},
                                   {"type": "ecc_under_load", "gpu": 2, "uncorrected": 1}])
    counters = "-q", "-d", "PERFORMANCE,ECC,ROW_REMAPPER,CLOCK"
    idle = parse_nvidia_smi_q(shim(path, "nvidia-smi", *counters))
    assert idle.count() == 8 and dict(idle.gpus[0].clock_reasons)["gpu_idle"] and idle.gpus[0].sm_clock_mhz == 345
    assert idle.gpus[0].clock_counters is None  # driver 550: no counters section (real 550.127 report has none)
    samples = parse_nvidia_smi_csv(shim(path, "nvidia-smi", "--query-gpu=index,clocks.sm,clocks_event_reasons.active",
                                        "--format=csv", "-lms", "500"))
    loaded = dict(("GPU%d" % g.index, g) for g in samples.gpus)
    assert dict(loaded["GPU0"].clock_reasons)["sw_power_cap"] and loaded["GPU0"].sm_clock_mhz == 1410
    assert dict(loaded["GPU3"].clock_reasons)["hw_thermal_slowdown"] and loaded["GPU3"].sm_clock_mhz < 1300
    assert dict(idle.per_gpu("ecc_uncorrected_volatile"))["GPU2"] == 0
    shim(path, "all_reduce_perf", "-b", "1G", "-e", "1G", "-g", "8")
    after = parse_nvidia_smi_q(shim(path, "nvidia-smi", *counters))
    assert dict(after.per_gpu("ecc_uncorrected_volatile"))["GPU2"] == 1 and after.gpus[2].remap_pending
    full = parse_nvidia_smi_q(shim(path, "nvidia-smi", "-q"))
    assert {(g.fabric_state, g.fabric_status) for g in full.gpus} == {("Completed", "Success")}


def test_a_fabric_down_gpu_shows_its_registration_unfinished_in_the_full_report(tmp_path):
    path = model(tmp_path, faults=[{"type": "fabric_down", "gpu": 5},
                                   {"type": "fabric_down", "gpu": 6, "state": "Completed", "status": "Failure"}])
    full = dict(("GPU%d" % g.index, (g.fabric_state, g.fabric_status))
                for g in parse_nvidia_smi_q(shim(path, "nvidia-smi", "-q")).gpus)
    assert full.pop("GPU5") == ("In Progress", None) and full.pop("GPU6") == ("Completed", "Failure")
    assert set(full.values()) == {("Completed", "Success")}


def test_driver_580_models_print_the_cumulative_counters(tmp_path):
    path = model(tmp_path, faults=[{"type": "thermal_slowdown", "gpu": 3}])
    data = json.loads(open(path).read())
    data["gpus"]["driver_version"] = "580.159.04"
    open(path, "w").write(json.dumps(data))
    shim(path, "gpu_burn", "10")
    gpus = parse_nvidia_smi_q(shim(path, "nvidia-smi", "-q", "-d", "PERFORMANCE"))
    assert dict(gpus.gpus[0].clock_counters)["sw_power_cap"] == 9700000
    assert dict(gpus.gpus[0].clock_counters)["hw_thermal_slowdown"] == 0
    assert dict(gpus.gpus[3].clock_counters)["sw_thermal_slowdown"] == 4000000


def test_mpirun_shim_reads_every_participant_from_the_fleet_dir(tmp_path):
    fleet = tmp_path / "fleet"
    (fleet / "lab-node-02").mkdir(parents=True)
    leader = model(tmp_path)
    peer = model(tmp_path, node="lab-node-02", faults=[{"type": "slow_hca", "hca": "mlx5_1", "bw_gbps": 96.5}])
    os.rename(peer, str(fleet / "lab-node-02" / "hwmodel.json"))
    out = shim(leader, "mpirun", "--allow-run-as-root", "-H", "lab-node-01:8,lab-node-02:8", "-np", "16",
               "all_reduce_perf", "-b", "1G", "-e", "8G", "-f", "2", "-g", "1", fleet=str(fleet))
    result = parse_nccl(out)
    assert result.nranks == 16 and result.busbw_at(8 * 1024 ** 3) < 100  # the slow HCA bounds the ring
    down = shim(leader, "mpirun", "-H", "lab-node-01,lab-node-09", "-np", "16", "all_reduce_perf", fleet=str(fleet),
                rc=1)
    assert "ORTE was unable to reliably start" in down and "lab-node-09" in down


def test_shims_need_only_the_standard_library(tmp_path):
    env = {"GPUFLEET_HWSIM_MODEL": model(tmp_path), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-E", "-s", "-S", os.path.join(HWSIM, "hwsim.py"), "nvidia-smi", "-L"],
                          capture_output=True, text=True, env=env, timeout=30, check=False)
    assert proc.returncode == 0 and proc.stdout.count("GPU ") == 8
    bad = subprocess.run([sys.executable, "-E", "-s", os.path.join(HWSIM, "hwsim.py"), "nvidia-smi", "-L"],
                         capture_output=True, text=True, env={"GPUFLEET_HWSIM_MODEL": "/nonexistent"}, timeout=30,
                         check=False)
    assert bad.returncode == 3 and "cannot read hardware model" in bad.stderr


def _stand_in_sampler(seconds):
    """A process whose command line reads as the gate's clock sampler (loop-mode nvidia-smi)."""
    return subprocess.Popen([sys.executable, "-c", "import sys, time; time.sleep(float(sys.argv[1]))", str(seconds),
                             "nvidia-smi", "-lms", "500"])


def test_the_burn_ends_only_after_the_sampler_beside_it_has_finished(tmp_path):
    # on a loaded host the sampler, started first, could otherwise print nothing before the burn ends
    sampler = _stand_in_sampler(1.5)
    try:
        parse_gpu_burn(shim(model(tmp_path), "gpu_burn", "20"))
        assert sampler.poll() is not None
    finally:
        sampler.kill()
        sampler.wait()


def test_the_burn_waits_for_a_sampler_no_longer_than_its_seconds(tmp_path):
    sampler = _stand_in_sampler(120)
    try:
        parse_gpu_burn(shim(model(tmp_path), "gpu_burn", "1"))
        assert sampler.poll() is None
    finally:
        sampler.kill()
        sampler.wait()
