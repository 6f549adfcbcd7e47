"""gpufleet gate evaluate: re-judges saved raw outputs without running a tool."""
import json
import os

import pytest
import yaml

from gpufleet import main as cli_main

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "plugins", "module_utils", "gate",
                   "fixtures")
PROFILE = {"profile": "p", "checks": {"gpu_count": {"equals": 8, "unit": "count"},
                                      "xid": {"deny": [48, 79], "unit": "xid"},
                                      "gpu_burn": {"min": 8, "unit": "gpus"},
                                      "nccl_single_node": {"min": 400, "unit": "GB/s", "message_size": "8G"}}}
CSV = "index, name\n" + "".join("%d, NVIDIA H100 80GB HBM3\n" % i for i in range(8))
BURN = "Tested 8 GPUs:\n" + "".join("\tGPU %d: OK\n" % i for i in range(8))
RELEASE = 'VERSION="2026.06.2"\nBUILD_ID="b1"\nPINS_SHA256="abc"\n'


def fixture(*parts):
    with open(os.path.join(FIX, *parts)) as handle:
        return handle.read()


@pytest.fixture
def saved(tmp_path):
    raw = tmp_path / "report" / "raw"
    raw.mkdir(parents=True)
    for name, text in (("image_release", RELEASE), ("nvidia_smi_query", CSV), ("gpu_burn", BURN),
                       ("dmesg", fixture("dmesg", "550-clean-boot.txt")),
                       ("nccl_single_node", fixture("nccl", "2.14-pass-8xh100-single-node.txt"))):
        (raw / (name + ".txt")).write_text(text)
    (raw / "dmesg.stderr.txt").write_text("ignored")
    (tmp_path / "report" / "inputs.json").write_text(json.dumps({"expected_release": {"VERSION": "2026.06.2"},
                                                                "node": "n7"}))
    (tmp_path / "p.yml").write_text(yaml.safe_dump(PROFILE))
    return tmp_path


def evaluate(saved, *extra):
    out = saved / "out.json"
    code = cli_main.main(["gate", "evaluate", "--profile", str(saved / "p.yml"), "--results",
                          str(saved / "report"), "--output", str(out)] + list(extra))
    return code, json.loads(out.read_text())


def test_passing_outputs_exit_zero_and_write_json(saved, capsys):
    code, doc = evaluate(saved, "--phases", "attestation,gpu,nvlink")
    assert code == 0 and doc["verdict"] == "pass", doc["reason"]
    assert doc["node"] == "n7" and doc["source"].endswith("report")
    names = [c["name"] for p in doc["phases"] for c in p["checks"]]
    assert names == ["image_release", "gpu_count", "xid", "gpu_burn", "nccl_single_node"]
    out = capsys.readouterr().out
    assert "verdict: PASS" in out and "written: " in out


def test_a_stricter_profile_fails_from_the_same_outputs(saved):
    strict = dict(PROFILE, checks=dict(PROFILE["checks"], nccl_single_node={"min": 500, "unit": "GB/s"}))
    (saved / "p.yml").write_text(yaml.safe_dump(strict))
    code, doc = evaluate(saved)
    assert code == 1 and doc["failed_check"] == "nccl_single_node" and "below the floor" in doc["reason"]


def test_saved_fault_fails_and_missing_output_fails_closed(saved):
    (saved / "report" / "raw" / "gpu_burn.txt").write_text(fixture("gpu_burn", "1.1-faulty-gpu3.txt"))
    (saved / "report" / "raw" / "dmesg.txt").unlink()
    code, doc = evaluate(saved)
    verdicts = dict((c["name"], c) for p in doc["phases"] for c in p["checks"])
    assert code == 1 and "FAULTY: GPU 3" in verdicts["gpu_burn"]["reason"]
    assert "no saved output dmesg.txt" in verdicts["xid"]["reason"]


def test_expect_overrides_inputs_and_raw_folder_works_directly(saved):
    code, doc = evaluate(saved, "--expect", "VERSION=2027.01.1", "--phases", "attestation")
    assert code == 1 and "expected 2027.01.1" in doc["reason"]
    out = saved / "o2.json"
    code = cli_main.main(["gate", "evaluate", "--profile", str(saved / "p.yml"), "--results",
                          str(saved / "report" / "raw"), "--phases", "gpu", "--output", str(out)])
    assert code == 0


@pytest.mark.parametrize("args,message", [
    (["--results", "/nonexistent"], "does not exist"),
    (["--expect", "VERSION"], "is not KEY=VALUE"),
    (["--phases", "warp"], "Unknown gate phase"),
])
def test_user_errors_exit_one_with_a_message(saved, capsys, args, message):
    base = ["gate", "evaluate", "--profile", str(saved / "p.yml"), "--results", str(saved / "report")]
    assert cli_main.main(base + args) == 1
    assert message in capsys.readouterr().err


def test_named_profile_resolves_to_the_collection(saved, capsys):
    code = cli_main.main(["gate", "evaluate", "--profile", "h100-sxm-8x", "--results", str(saved / "report"),
                          "--output", str(saved / "h100.json")])
    assert code == 1 and json.loads((saved / "h100.json").read_text())["profile"] == "h100-sxm-8x"


def test_per_hca_outputs_are_judged_together(saved):
    raw = saved / "report" / "raw"
    (raw / "ib_write_bw.mlx5_0.txt").write_text(fixture("perftest", "6.10-gdr-400g-mlx5_0.txt"))
    (raw / "ib_write_bw.mlx5_1.txt").write_text(fixture("perftest", "6.10-slow-hca-mlx5_1.txt"))
    (raw / "ib_write_bw.mlx5_1.stderr.txt").write_text("not an output")
    fabric = {"profile": "p", "checks": {"ib_write_bw": {"min": 300, "unit": "Gb/s", "hcas": 2}}}
    (saved / "p.yml").write_text(yaml.safe_dump(fabric))
    code, doc = evaluate(saved)
    check = doc["phases"][3]["checks"][0]
    assert code == 1 and check["name"] == "ib_write_bw" and "offending: mlx5_1" in check["reason"]
    assert check["details"]["values"] == {"mlx5_0": 392.82, "mlx5_1": 96.5}
    (raw / "ib_write_bw.mlx5_1.txt").write_text(fixture("perftest", "6.10-gdr-400g-mlx5_0.txt"))
    code, doc = evaluate(saved)
    assert code == 1 and "a report for device mlx5_1" in doc["reason"]  # a file that names another HCA


@pytest.mark.parametrize("name, verdict, fragment", [
    ("550-xml-8xh100-healthy.txt", "pass", None),
    ("550-xml-8xh100-mig-gpu0-3-na.txt", "fail", "not reported by nvidia-smi for GPU0, GPU1, GPU2, GPU3"),
])
def test_saved_nvidia_smi_xml_is_judged(saved, capsys, name, verdict, fragment):
    """A site's `nvidia-smi -q -x` capture saved as the query probe's output is read, not refused."""
    (saved / "report" / "raw" / "nvidia_smi_query.txt").write_text(fixture("nvidia_smi", name))
    checks = {"gpu_count": {"equals": 8, "unit": "count"}, "ecc_uncorrectable": {"max": 0, "unit": "count"}}
    (saved / "p.yml").write_text(yaml.safe_dump({"profile": "p", "checks": checks}))
    code, doc = evaluate(saved, "--phases", "gpu")
    assert doc["verdict"] == verdict and code == (0 if verdict == "pass" else 1)
    if fragment:
        out = capsys.readouterr().out
        assert fragment in doc["reason"] and fragment in out and "Cannot parse" not in out
