"""The saved gate reports the view reads (gpufleet.view.gate_files)."""
import json

from gpufleet.view.gate_files import gate_reports


def test_a_nodes_reports_are_merged_in_name_order_and_a_fabric_failure_wins(tmp_path):
    (tmp_path / "n1.a.json").write_text(json.dumps({"node": "n1", "verdict": "pass", "phases": [{"name": "gpu"}]}))
    (tmp_path / "n1.b.json").write_text(json.dumps({"node": "n1", "verdict": "fail", "reason": "slow",
                                                    "failed_phase": "fabric", "phases": [{"name": "fabric"}]}))
    (tmp_path / "n2.json").write_text(json.dumps({"verdict": "pass"}))  # no node field: named by the file
    reports = gate_reports(str(tmp_path))
    assert [p["name"] for p in reports["n1"]["phases"]] == ["gpu", "fabric"]
    assert (reports["n1"]["verdict"], reports["n1"]["reason"], reports["n1"]["failed_phase"]) == ("fail", "slow", "fabric")
    assert reports["n2"] == {"verdict": "pass"}


def test_an_unreadable_report_is_skipped_and_no_folder_reads_nothing(tmp_path, monkeypatch):
    (tmp_path / "n1.json").write_text("{not json")
    assert gate_reports(str(tmp_path)) == {}
    monkeypatch.chdir(tmp_path)
    (tmp_path / "n2.json").write_text(json.dumps({"node": "n2"}))
    assert gate_reports(None) == {} and gate_reports("") == {}  # never the current folder
