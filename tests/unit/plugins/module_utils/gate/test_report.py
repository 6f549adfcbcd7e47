"""Reports: JSON keys cluster_join relies on, well-formed JUnit XML, text table, files on disk."""
import json
import xml.etree.ElementTree as ET

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate import report
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.results import CheckResult, failed_closed

META = {"report_id": "n1-20260101T000000Z-abc123", "node": "n1", "image_version": "2026.06.2",
        "profile": "lab", "sku": "lab-sim-8x", "run_all": False, "started": "s", "finished": "f"}


def outcome(fail=True):
    ok = CheckResult("gpu_count", "gpu", 8, 8, "count", "pass", "gpu_count: 8 count as expected")
    bad = CheckResult("nvbandwidth_d2d", "nvlink", 92.5, 300, "GB/s", "fail" if fail else "pass",
                      "nvbandwidth_d2d: 92.5 GB/s & <low> is below the floor of 300 GB/s",
                      (("values", (("GPU0->GPU2", 92.5),)),))
    skip = CheckResult("fio_seq_read", "storage", None, None, "", "skip", "not run: phase nvlink failed")
    return {"verdict": "fail" if fail else "pass", "failed_phase": "nvlink" if fail else None,
            "failed_check": "nvbandwidth_d2d" if fail else None, "reason": bad.reason if fail else "",
            "duration": 12.3456,
            "phases": [{"name": "gpu", "verdict": "pass", "results": [ok], "extra": {"gpu_count": {"attempts": 1}},
                        "duration": 1.0},
                       {"name": "nvlink", "verdict": "fail" if fail else "pass", "results": [bad], "duration": 2.0},
                       {"name": "storage", "verdict": "skip", "results": [skip], "duration": 0.0},
                       {"name": "soak", "verdict": "skip", "results": [], "note": "no checks", "duration": 0.0}]}


def test_report_has_the_keys_cluster_join_reads():
    doc = report.build_report(outcome(), META)
    for key in ("verdict", "report_id", "image_version", "node", "failed_phase", "reason", "phases"):
        assert key in doc
    assert doc["verdict"] == "fail" and doc["failed_phase"] == "nvlink"
    assert doc["counts"] == {"pass": 1, "fail": 1, "skip": 1}
    assert doc["phases"][0]["checks"][0]["attempts"] == 1
    assert doc["phases"][1]["checks"][0]["details"] == {"values": {"GPU0->GPU2": 92.5}}
    json.dumps(doc)


def test_junit_is_well_formed_and_counts_match():
    doc = report.build_report(outcome(), META)
    root = ET.fromstring(report.junit_xml(doc).split("\n", 1)[1])
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("skipped"), root.get("errors")) == ("3", "1", "1", "0")
    suites = dict((s.get("name"), s) for s in root)
    assert list(suites) == ["gpu", "nvlink", "storage", "soak"]
    failure = suites["nvlink"].find("testcase/failure")
    assert "below the floor" in failure.get("message") and "&" in failure.get("message")
    assert suites["storage"].find("testcase/skipped") is not None
    assert suites["gpu"].find("testcase").get("classname") == "gpufleet.gate.gpu"


def test_text_table_lists_checks_and_the_reason():
    text = report.text_table(report.build_report(outcome(), META))
    lines = text.splitlines()
    assert lines[0].split() == ["PHASE", "CHECK", "VERDICT", "MEASURED", "THRESHOLD", "UNIT"]
    assert any(line.split()[:4] == ["nvlink", "nvbandwidth_d2d", "FAIL", "92.5"] for line in lines)
    assert "verdict: FAIL" in text and "reason: nvbandwidth_d2d: 92.5 GB/s" in text
    passed = report.text_table(report.build_report(outcome(fail=False), META))
    assert "verdict: PASS" in passed and "reason:" not in passed


def test_write_report_files_and_latest(tmp_path):
    doc = report.build_report(outcome(), META)
    folder = report.write_report(str(tmp_path), doc)
    names = sorted(p.name for p in (tmp_path / META["report_id"]).iterdir())
    assert names == ["junit.xml", "report.json", "summary.txt"]
    assert json.loads((tmp_path / "latest.json").read_text()) == json.loads(
        (tmp_path / META["report_id"] / "report.json").read_text())
    assert folder == str(tmp_path / META["report_id"])
    assert not list(tmp_path.rglob("*.tmp.*"))


def test_raw_names_are_safe_and_stderr_is_kept(tmp_path):
    assert report.raw_name("ib_write_bw.mlx5_0") == "ib_write_bw.mlx5_0.txt"
    assert report.raw_name("../etc/passwd") == ".._etc_passwd.txt"
    rel = report.write_raw(str(tmp_path), "dcgm_diag", "{}", "warning")
    assert rel == "raw/dcgm_diag.txt"
    assert (tmp_path / "raw" / "dcgm_diag.stderr.txt").read_text() == "warning"
    report.write_raw(str(tmp_path), "dmesg", "x")
    assert not (tmp_path / "raw" / "dmesg.stderr.txt").exists()


def test_failed_closed_result_renders_without_numbers():
    doc = report.build_report({"verdict": "fail", "failed_phase": "gpu", "failed_check": "xid", "reason": "r",
                               "phases": [{"name": "gpu", "verdict": "fail", "results": [
                                   failed_closed("xid", "gpu", "xid: dmesg was not found")]}]}, META)
    assert doc["phases"][0]["checks"][0]["measured"] is None
    assert "xid" in report.text_table(doc) and "failure" in report.junit_xml(doc)
