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


# --- bad input: one clear line, exit 1, no report file ----------------------------------------

def refused(saved, capsys, *extra, output=None):
    """Run evaluate expecting a refusal: exit 1, one stderr line, no report and no temporary file left."""
    out = output or saved / "out.json"
    code = cli_main.main(["gate", "evaluate", "--profile", str(saved / "p.yml"), "--results",
                          str(saved / "report"), "--output", str(out)] + list(extra))
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("gpufleet gate: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and not os.path.exists(str(out))
    assert not [n for n in os.listdir(str(saved)) if n.endswith(".tmp")]
    return err


def test_a_duplicate_key_in_the_profile_is_refused_naming_key_and_line(saved, capsys):
    (saved / "p.yml").write_text("profile: p\nchecks:\n  gpu_burn: {min: 8, unit: gpus}\n"
                                 "  gpu_burn: {min: 1, unit: gpus}\n")
    err = refused(saved, capsys)
    assert 'at "checks.gpu_burn (%s line 4)": key \'gpu_burn\' appears twice (first on line 3)' % (
        saved / "p.yml") in err


def test_a_kernel_log_with_bytes_that_are_not_utf8_is_still_judged(saved):
    """Real kernel logs hold such bytes (a driver's garbled message); the XID after them still counts."""
    log = fixture("dmesg", "550-clean-boot.txt").encode() + b"[ 9.1] \xff\xfe\xc3 garbled\n" + \
        b"[ 9.2] NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus.\n"
    (saved / "report" / "raw" / "dmesg.txt").write_bytes(log)
    code, doc = evaluate(saved, "--phases", "gpu")
    xid = [c for p in doc["phases"] for c in p["checks"] if c["name"] == "xid"][0]
    assert code == 1 and xid["verdict"] == "fail" and "deny-listed XID 79" in xid["reason"]


@pytest.mark.parametrize("content, fragment", [
    ('[1, 2]', "holds a JSON array, not an object"),
    ('"n7"', "holds a JSON string, not an object"),
    ('{"expected_release": "2026.06.2"}', '"expected_release" is a JSON string; it must be an object'),
    ('{"expected_release": {"VERSION": [1]}}', '"expected_release.VERSION" is a JSON array; it must be a string'),
    ('{"peers": "n8"}', '"peers" is a JSON string; it must be a list of host names'),
    ('{"peers": [1, null]}', '"peers" must list host names'),
    ('{"node": 7}', '"node" is a JSON number; it must be a host name'),
    ('{"tpm_quote": [1]}', '"tpm_quote" is a JSON array'),
    ('{"tpm_quote": {"nonce": 5}}', '"tpm_quote.nonce" is a JSON number'),
    ('{"expected_release": {', "not valid JSON"),
    ("[" * 100000, "nested too deeply"),
    (b'{"node": "\xff"}', "not UTF-8 text"),
])
def test_inputs_json_of_the_wrong_shape_is_refused_naming_the_key(saved, capsys, content, fragment):
    path = saved / "report" / "inputs.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    err = refused(saved, capsys)
    assert str(path) in err and fragment in err and "Repair it" in err


def _not_regular(raw, kind):
    target = raw / "nvidia_smi_query.txt"
    target.unlink()
    if kind == "folder":
        target.mkdir()
    elif kind == "device":
        target.symlink_to("/dev/zero")
    elif kind == "pipe":
        os.mkfifo(str(target))
    elif kind == "too large":  # sparse: no disk used
        with open(str(target), "wb") as handle:
            handle.truncate(64 * 1024 * 1024 + 1)
    return target


@pytest.mark.parametrize("kind, fragment", [
    ("folder", "is a folder, not a regular file"),
    ("device", "is a character device, not a regular file"),  # a link to /dev/zero would be read for ever
    ("pipe", "is a named pipe, not a regular file"),
    ("too large", "is 67108865 bytes, above the 64 MiB this command reads"),
])
def test_a_raw_file_that_is_not_a_bounded_regular_file_is_refused(saved, capsys, kind, fragment):
    target = _not_regular(saved / "report" / "raw", kind)
    err = refused(saved, capsys)
    assert "%s %s" % (target, fragment) in err and "Replace it with the tool's saved output" in err


def test_an_output_in_a_missing_folder_is_refused_before_judging(saved, capsys):
    err = refused(saved, capsys, output=saved / "absent" / "out.json")
    assert "Output folder %s does not exist" % (saved / "absent") in err
    assert not (saved / "absent").exists()


def test_an_output_that_is_a_folder_is_refused(saved, capsys):
    (saved / "out.json").mkdir()
    code = cli_main.main(["gate", "evaluate", "--profile", str(saved / "p.yml"), "--results",
                          str(saved / "report"), "--output", str(saved / "out.json")])
    assert code == 1 and "is a folder. Pass --output with a file name" in capsys.readouterr().err


def test_a_failed_write_leaves_neither_a_partial_report_nor_a_temporary_file(saved, capsys, monkeypatch):
    (saved / "out.json").write_text("the previous report\n")

    def fail(src, dst):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "replace", fail)
    code = cli_main.main(["gate", "evaluate", "--profile", str(saved / "p.yml"), "--results",
                          str(saved / "report"), "--output", str(saved / "out.json")])
    err = capsys.readouterr().err
    assert code == 1 and "Cannot write %s (No space left on device)" % (saved / "out.json") in err
    assert (saved / "out.json").read_text() == "the previous report\n"
    assert sorted(os.listdir(str(saved))) == ["out.json", "p.yml", "report"]


def test_empty_nvlink_status_says_no_links_reported(saved):
    (saved / "report" / "raw" / "nvidia_smi_nvlink.txt").write_text("")
    (saved / "p.yml").write_text(yaml.safe_dump({"profile": "p", "checks": {"nvlink_links": {"min": 12,
                                                                                             "unit": "links"}}}))
    code, doc = evaluate(saved, "--phases", "nvlink")
    assert code == 1 and doc["reason"].startswith("nvlink_links: no NVLink links reported: nvidia-smi nvlink "
                                                  "--status printed nothing")
    assert "is empty" not in doc["reason"]
