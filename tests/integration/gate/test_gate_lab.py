"""The acceptance gate on lab node containers, through ansible-playbook and the docker connection.

Two containers from a locally built image (debian base + fio + iperf3) on a private network:
``lab-node-01`` runs the gate (leader of the fabric set), ``lab-node-02`` is its peer (an
iperf3 server). The hwsim shims and hardware models are mounted read-only. One playbook run
covers every scenario: a healthy node passes; each injected fault fails at its phase with
its reason. Then a saved report is re-judged offline with ``gpufleet gate evaluate``.
"""
import json
import os
import subprocess
import uuid

import pytest
import yaml

from tests.helpers import ROOT, VENV_BIN, ensure_base_image, need_docker

pytestmark = pytest.mark.integration

IMAGE = "gpufleet-gate-node:bookworm"
HERE = os.path.dirname(os.path.abspath(__file__))
RELEASE = {"VERSION": "2026.06.2", "BUILD_ID": "lab-b1", "PINS_SHA256": "9f2c" * 16}


def lab_profile():
    with open(os.path.join(ROOT, "lab", "profiles", "gate", "lab.yml")) as handle:
        return yaml.safe_load(handle)


# What the lab BMCs report (redfish_info's firmware inventory shape), matching the lab profile's pins.
PINS = dict(lab_profile()["checks"].get("firmware_pins", {}).get("pins", {"BMC": "1.4.2", "BIOS": "2.1.0"}))
FIRMWARE = [{"id": key, "name": key + " Firmware", "version": version, "updateable": True}
            for key, version in sorted(PINS.items())]

# name, faults / overrides, expected (phase, check, fragment of the reason)
SCENARIOS = [
    {"name": "healthy"},
    {"name": "missing_gpu", "faults": [{"type": "missing_gpu", "gpu": 7}],
     "expect": ("gpu", "gpu_count", "found 7 count, expected 8")},
    {"name": "ecc", "faults": [{"type": "ecc", "gpu": 0, "uncorrected": 2}],
     "expect": ("gpu", "ecc_uncorrectable", "GPU0")},
    {"name": "xid", "faults": [{"type": "xid", "gpu": 1, "xid": 79}],
     "expect": ("gpu", "xid", "deny-listed XID 79")},
    {"name": "faulty_gpu", "faults": [{"type": "faulty_gpu", "gpu": 3}],
     "expect": ("gpu", "gpu_burn", "FAULTY: GPU 3")},
    {"name": "degraded_nvlink", "faults": [{"type": "degraded_nvlink", "gpu": 2, "factor": 0.25}],
     "expect": ("nvlink", "nvlink_links", "GPU2")},
    {"name": "slow_hca", "faults": [{"type": "slow_hca", "hca": "mlx5_1", "bw_gbps": 96.5}],
     "expect": ("fabric", "ib_write_bw", "mlx5_1")},
    {"name": "wrong_image", "expected_release": dict(RELEASE, VERSION="2026.07.1"),
     "expect": ("attestation", "image_release", "VERSION is 2026.06.2, expected 2026.07.1")},
    {"name": "old_firmware", "firmware": [dict(f, version="0.9.9") if f["id"] == "BMC" else f for f in FIRMWARE],
     "expect": ("attestation", "firmware_pins", "BMC is 0.9.9, pinned %s" % PINS["BMC"])},
    {"name": "degraded_nvlink_run_all", "run_all": True, "phases": ["attestation", "gpu", "nvlink", "fabric"],
     "faults": [{"type": "degraded_nvlink", "gpu": 2, "factor": 0.25}]},
    {"name": "missing_tool", "tool_paths": {"dcgmi": "/usr/bin/dcgmi"},
     "expect": ("gpu", "dcgm_diag", "tool dcgmi was not found")},
    # driver 580 prints the cumulative clock-event counters; the other scenarios' 550 is timed from samples
    {"name": "thermal_slowdown", "faults": [{"type": "thermal_slowdown", "gpu": 3}],
     "model": {"gpus": {"driver_version": "580.159.04"}},
     "expect": ("gpu", "clock_events", "during gpu-burn GPU3: HW slowdown")},
    {"name": "ecc_under_load", "faults": [{"type": "ecc_under_load", "gpu": 2, "uncorrected": 1}],
     "expect": ("soak", "soak_errors", "offending: GPU2 (uncorrectable ECC errors gained")},
    # one GPU still waiting for a fabric manager: the node cannot run CUDA work on it
    {"name": "fabric_down", "faults": [{"type": "fabric_down", "gpu": 5}],
     "expect": ("nvlink", "nvswitch_fabric", "not in the fabric: GPU5 In Progress/N/A")},
]


def gate_profile():
    """The lab profile plus the fabric and firmware checks the two-node set exercises."""
    profile = lab_profile()
    checks = profile["checks"]
    checks.setdefault("firmware_pins", {"pins": PINS, "unit": "version"})
    checks.setdefault("ib_write_bw", {"min": 300, "unit": "Gb/s", "retries": 1})
    checks.setdefault("nccl_multi_node", {"min": 300, "unit": "GB/s", "message_size": "8G"})
    # iperf3 runs for real between two containers on a CI machine shared with other jobs: at load
    # average 14 on 2 cores it measured 0.77 Gb/s, under lab.yml's 1 Gb/s. Here the floor only has
    # to prove that data moved, so a busy machine cannot mask the fault under test.
    checks["iperf3_tcp"]["min"] = 0.05
    return profile


def docker(*args, check=True):
    proc = subprocess.run(["docker"] + list(args), capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        pytest.fail("docker %s failed: %s" % (" ".join(args[:3]), proc.stderr[-1500:]))
    return proc.stdout.strip()


def ensure_node_image():
    ensure_base_image()
    if subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True, check=False).returncode != 0:
        docker("build", "-q", "-t", IMAGE, os.path.join(HERE, "node-image"))


def write_model(fleet, node, faults=()):
    with open(os.path.join(ROOT, "lab", "hwsim", "models", "healthy.json")) as handle:
        model = json.load(handle)
    folder = fleet / node
    folder.mkdir(parents=True, exist_ok=True)
    model.update(node=node, faults=list(faults))
    (folder / "hwmodel.json").write_text(json.dumps(model))
    return model


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    need_docker()
    ensure_node_image()
    tmp = tmp_path_factory.mktemp("gate-lab")
    fleet = tmp / "fleet"
    model = write_model(fleet, "lab-node-01")
    write_model(fleet, "lab-node-02")
    tag = uuid.uuid4().hex[:8]
    net = "gpufleet-gate-net-" + tag
    names = {"lab-node-01": "gpufleet-gate-n1-" + tag, "lab-node-02": "gpufleet-gate-n2-" + tag}
    docker("network", "create", net)
    try:
        for node, name in names.items():
            docker("run", "-d", "--name", name, "--hostname", node, "--network", net, "--network-alias", node,
                   # fio qualifies a RAM disk here, not the host disk other jobs share
                   "--tmpfs", "/var/tmp/gpufleet-gate:size=256m",
                   "-v", "%s:/opt/gpufleet-lab-hwsim:ro" % os.path.join(ROOT, "lab", "hwsim"),
                   "-v", "%s:/etc/gpufleet-lab:ro" % (fleet / node), "-v", "%s:/etc/gpufleet-lab-fleet:ro" % fleet,
                   IMAGE, "sleep", "infinity")
        docker("exec", "-d", names["lab-node-02"], "iperf3", "-s")
        yield {"tmp": tmp, "fleet": fleet, "model": model, "leader": names["lab-node-01"]}
    finally:
        for name in names.values():
            docker("rm", "-f", name, check=False)
        docker("network", "rm", net, check=False)


@pytest.fixture(scope="module")
def results(lab):
    tmp = lab["tmp"]
    inventory = {"all": {"children": {"leader": {"hosts": {lab["leader"]: {
        "ansible_connection": "community.docker.docker", "ansible_python_interpreter": "/usr/bin/python3"}}}}}}
    (tmp / "inventory.yml").write_text(yaml.safe_dump(inventory))
    extra = {"gate_profile": gate_profile(), "gate_release": RELEASE, "gate_firmware": FIRMWARE,
             "gate_model": lab["model"], "gate_model_path": str(lab["fleet"] / "lab-node-01" / "hwmodel.json"),
             "gate_scenarios": SCENARIOS, "gate_results_file": str(tmp / "results.json")}
    (tmp / "extra.json").write_text(json.dumps(extra))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build", "collections"))
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), "-i", str(tmp / "inventory.yml"),
                           "-e", "@" + str(tmp / "extra.json"),
                           os.path.join(HERE, "playbooks", "gate_scenarios.yml")],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=1800, check=False)
    if proc.returncode != 0:
        pytest.fail("ansible-playbook failed:\n" + proc.stdout[-4000:] + proc.stderr[-2000:])
    return json.loads((tmp / "results.json").read_text())


def test_healthy_node_passes_every_phase(results):
    run = results["scenarios"]["healthy"]
    assert run["verdict"] == "pass", run["summary"]
    report = run["report"]
    ran = dict((p["name"], p["verdict"]) for p in report["phases"])
    assert set(ran.values()) == {"pass"} and list(ran) == ["attestation", "gpu", "nvlink", "fabric", "storage",
                                                           "reference", "soak"]
    assert report["image_version"] == "2026.06.2" and report["failed_phase"] is None
    checks = dict((c["name"], c) for p in report["phases"] for c in p["checks"])
    assert checks["fio_rand_read"]["measured"] > 1000 and checks["iperf3_tcp"]["measured"] > 0.05
    assert checks["nccl_multi_node"]["measured"] > 300
    # power-capped under load (the model's healthy GPUs, as a real H100 at 700 W): reported, passed
    assert checks["clock_events"]["verdict"] == "pass"
    assert "SW power cap (reported, not judged): GPU0: SW power cap" in checks["clock_events"]["reason"]
    assert checks["clock_events"]["details"]["mean_sm_clock_mhz"]["GPU0"] == 1410
    assert checks["soak_errors"]["verdict"] == checks["nvswitch_fabric"]["verdict"] == "pass"
    assert "raw/soak_errors.before_smi.txt" in checks["soak_errors"]["raw"]
    assert set(checks["ib_write_bw"]["raw"]) == {"raw/ib_write_bw.mlx5_0.txt", "raw/ib_write_bw.mlx5_1.txt"}


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if "expect" in s], ids=lambda s: s["name"])
def test_each_fault_fails_at_its_phase_with_its_reason(results, scenario):
    run = results["scenarios"][scenario["name"]]
    phase, check, fragment = scenario["expect"]
    assert run["verdict"] == "fail" and run["failed"] is False  # fail_on_verdict: false
    assert (run["failed_phase"], run["failed_check"]) == (phase, check), run["summary"]
    assert fragment in run["reason"]
    names = [p["name"] for p in run["report"]["phases"]]
    later = [p for p in run["report"]["phases"][names.index(phase) + 1:] if p["name"] in ("storage", "reference",
                                                                                        "soak")]
    assert all(c["verdict"] == "skip" for p in later for c in p["checks"])


def test_run_all_collects_every_failure(results):
    run = results["scenarios"]["degraded_nvlink_run_all"]
    assert (run["verdict"], run["failed_check"]) == ("fail", "nvlink_links")
    verdicts = dict((c["name"], c["verdict"]) for p in run["report"]["phases"] for c in p["checks"])
    assert verdicts["nvbandwidth_d2d"] == "fail" and verdicts["nccl_single_node"] == "fail"
    assert verdicts["nvbandwidth_h2d"] == "pass" and verdicts["ib_write_bw"] == "pass"
    assert "skip" not in verdicts.values() and "fio_seq_read" not in verdicts  # storage was not selected


def test_report_files_on_the_node(lab, results):
    run = results["scenarios"]["slow_hca"]
    folder = run["report_path"]
    listing = docker("exec", lab["leader"], "ls", folder, folder + "/raw").split()
    for name in ("report.json", "junit.xml", "summary.txt", "inputs.json", "ib_write_bw.mlx5_1.txt",
                 "nvidia_smi_query.txt", "gpu_burn.txt", "nccl_single_node.txt"):
        assert name in listing
    latest = json.loads(docker("exec", lab["leader"], "cat", "/var/lib/gpufleet/gate/latest.json"))
    last = list(results["scenarios"])[-1]
    assert latest["report_id"] == results["scenarios"][last]["report_id"] and latest["verdict"] == "fail"
    assert docker("exec", lab["leader"], "head", "-c", "38", folder + "/junit.xml").startswith("<?xml")


def test_check_mode_runs_nothing_and_lists_the_plan(lab, results):
    check = results["check_mode"]
    assert check["verdict"] is None and check["changed"] is True
    assert [p["phase"] for p in check["plan"]][:3] == ["attestation", "gpu", "nvlink"]
    gpu = [p for p in check["plan"] if p["phase"] == "gpu"][0]
    assert gpu["probes"][0]["args"][0].startswith("--query-gpu=")
    assert docker("exec", lab["leader"], "ls", "/var/lib/gpufleet/gate-check", check=False) == ""


def test_fail_verdict_fails_the_task_with_phase_and_reason(results):
    failing = results["failing"]
    assert failing["failed"] is True and failing["verdict"] == "fail"
    assert failing["msg"].startswith("Acceptance gate failed for node ")
    assert "at phase attestation, check image_release" in failing["msg"]


def test_offline_evaluate_rejudges_saved_outputs(lab, results, tmp_path):
    from gpufleet import main as cli_main

    folder = results["scenarios"]["degraded_nvlink_run_all"]["report_path"]
    docker("cp", "%s:%s" % (lab["leader"], folder), str(tmp_path / "report"))
    lax = gate_profile()
    lax["profile"] = "lax"
    lax["checks"]["nvlink_links"]["min"] = 4
    lax["checks"]["nvbandwidth_d2d"]["min"] = 90
    lax["checks"]["nccl_single_node"]["min"] = 100
    (tmp_path / "lax.yml").write_text(yaml.safe_dump(lax))
    out = tmp_path / "eval.json"
    code = cli_main.main(["gate", "evaluate", "--profile", str(tmp_path / "lax.yml"), "--results",
                          str(tmp_path / "report"), "--phases", "attestation,gpu,nvlink", "--output", str(out)])
    doc = json.loads(out.read_text())
    assert code == 0 and doc["verdict"] == "pass", doc["reason"]
    assert len([c for p in doc["phases"] for c in p["checks"]]) > 10
    code = cli_main.main(["gate", "evaluate", "--profile", os.path.join(ROOT, "lab", "profiles", "gate", "lab.yml"),
                          "--results", str(tmp_path / "report"), "--output", str(out)])
    assert code == 1 and json.loads(out.read_text())["failed_check"] == "nvlink_links"
