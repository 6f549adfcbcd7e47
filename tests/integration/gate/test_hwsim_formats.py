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
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nvidia_smi import parse_nvidia_smi_csv
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
    env = {"PATH": os.path.join(HWSIM, "bin") + os.pathsep + "/usr/bin:/bin", "GPUFLEET_HWSIM_MODEL": model_path}
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
