"""The gate with real processes on this machine: fio and iperf3 measure, missing hardware fails closed.

No GPU or RDMA device exists here, so those checks must fail with the tool's own reason;
fio and iperf3 (loopback, on the gate area's 127.0.30.x address) must measure and pass.
"""
import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.phases import GateContext, run_gate
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.runner import Runner
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.profile import profile_from_dict
from tests.helpers import need_tool

pytestmark = pytest.mark.integration

PROFILE = {"profile": "host", "checks": {
    "fio_seq_read": {"min": 1, "unit": "MB/s", "size": "16M", "runtime_s": 1},
    "fio_rand_write": {"min": 10, "unit": "IOPS", "size": "16M", "runtime_s": 1},
    "iperf3_tcp": {"min": 0.01, "unit": "Gb/s", "duration_s": 1},
    "ib_write_bw": {"min": 100, "unit": "Gb/s"},
    "gpu_count": {"equals": 8, "unit": "count"},
    "reference_job": {"min": 1, "unit": "steps/s", "metric": "steps", "command": "sleep 30; echo steps: 5",
                      "duration_s": 1},
}}


def results(tmp_path, phases, **options):
    base = {"storage_dir": str(tmp_path / "fio"), "loopback_address": "127.0.30.9", "hcas": ["mlx5_0"],
            "timeouts": {"reference_job": 2, "ib_write_bw": 20}}
    base.update(options)
    ctx = GateContext(profile_from_dict(PROFILE, "host"), runner=Runner(), options=base)
    outcome = run_gate(ctx, phases=phases, run_all=True)
    return dict((r.name, r) for p in outcome["phases"] for r in p["results"])


def test_fio_and_iperf3_measure_for_real(tmp_path):
    for tool in ("fio", "iperf3"):
        need_tool(tool)
    found = results(tmp_path, ["storage", "fabric"])
    assert found["fio_seq_read"].verdict == "pass" and found["fio_seq_read"].measured > 1
    assert found["fio_rand_write"].verdict == "pass" and found["fio_rand_write"].measured > 10
    assert found["iperf3_tcp"].verdict == "pass", found["iperf3_tcp"].reason
    assert not list((tmp_path / "fio").iterdir())  # the fio test file is removed


def test_missing_hardware_and_hung_jobs_fail_closed(tmp_path):
    need_tool("ib_write_bw")
    found = results(tmp_path, ["gpu", "fabric", "reference"], path_dirs=[])
    ib = found["ib_write_bw"]
    assert ib.verdict == "fail" and ib.measured is None and "Unable to find the Infiniband/RoCE device" in ib.reason
    gpus = found["gpu_count"]  # no nvidia-smi here, or one without a driver: either way nothing is measured
    assert gpus.verdict == "fail" and gpus.measured is None and "nvidia-smi" in gpus.reason
    job = found["reference_job"]
    assert job.verdict == "fail" and "did not finish within 2s" in job.reason
