import json

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import gang
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
from gpufleet.commands import report as report_cmd
from gpufleet.report import collect, render_html, render_markdown

PATH = ["enrolled", "inspected", "imaging", "configuring", "validating"]


class Clock:
    now = 1_800_000_000.0

    def __call__(self):
        self.now += 7.5
        return self.now


def _ledger(tmp_path):
    book = Ledger(str(tmp_path / "ledger.sqlite"), clock=Clock())
    for node in ("n1", "n2"):
        for state in PATH:
            book.transition(node, state, "ci", "to " + state, sku="lab", image_version="lab", run_id="r1")
    book.transition("n1", "ready", "ci", "gate passed", gate_report_id="n1-rep", run_id="r1")
    book.transition("n2", "failed", "ci", "gate failed: nvlink 92 < 300 GB/s", gate_report_id="n2-rep", run_id="r1")
    gate_dir = tmp_path / "gate"
    gate_dir.mkdir()
    (gate_dir / "n2.json").write_text(json.dumps({
        "node": "n2", "verdict": "fail", "profile": "lab", "reason": "nvbandwidth_d2d below floor",
        "phases": [{"name": "nvlink", "checks": [{
            "name": "nvbandwidth_d2d", "measured": 92.54, "threshold": {"min": 300},
            "unit": "GB/s", "verdict": "fail", "reason": "below <floor>"}]}]}))
    return book, str(gate_dir)


def test_report_has_nodes_gate_checks_and_a_timeline(tmp_path):
    book, gate_dir = _ledger(tmp_path)
    data = collect(book, gate_dir=gate_dir, run_id="r1", generated_at=1_800_000_200.0)
    by_node = {n["node"]: n for n in data["nodes"]}
    assert by_node["n1"]["state"] == "ready" and by_node["n2"]["gate_verdict"] == "fail"
    assert [s["state"] for s in by_node["n1"]["timeline"]] == PATH + ["ready"]
    assert by_node["n1"]["timeline"][0]["stop"] - by_node["n1"]["timeline"][0]["start"] > 0
    markdown = render_markdown(data)
    assert "| n2 | failed | lab | fail | n2-rep |" in markdown
    assert "| nvlink | nvbandwidth_d2d | FAIL | 92.54 | min 300 | GB/s |" in markdown
    page = render_html(data)
    assert page.count("<rect ") == len(PATH) * 2 + 2 and "<svg" in page
    assert "below &lt;floor&gt;" in page  # escaped


def test_report_includes_the_gang(tmp_path):
    book, gate_dir = _ledger(tmp_path)
    gang.plan(book, "g1", "lab", 1, 600)
    data = collect(book, gate_dir=gate_dir, gang_id="g1", generated_at=1_800_000_300.0)
    assert "Gang `g1`: **planned**" in render_markdown(data)


def test_report_command_writes_both_files(tmp_path, capsys):
    book, gate_dir = _ledger(tmp_path)
    book.close()
    paths = report_cmd.build(str(tmp_path / "ledger.sqlite"), str(tmp_path / "out"), gate_dir)
    assert open(paths["html"]).read().startswith("<!DOCTYPE html>")
    assert "# gpufleet bring-up report" in open(paths["markdown"]).read()


def test_fabric_report_is_merged_into_its_leader(tmp_path):
    book, gate_dir = _ledger(tmp_path)
    fabric = {"node": "n1", "verdict": "fail", "reason": "nccl_multi_node below floor", "failed_phase": "fabric",
              "phases": [{"name": "fabric", "checks": [{"name": "nccl_multi_node", "measured": 90.0,
                                                         "threshold": 340, "unit": "GB/s", "verdict": "fail"}]}]}
    node = {"node": "n1", "verdict": "pass", "phases": [{"name": "gpu", "checks": [
        {"name": "gpu_count", "measured": 8, "threshold": 8, "unit": "count", "verdict": "pass"}]}]}
    (tmp_path / "gate" / "n1.node.json").write_text(json.dumps(node))
    (tmp_path / "gate" / "n1.fabric.json").write_text(json.dumps(fabric))
    data = collect(book, gate_dir=gate_dir, generated_at=1_800_000_300.0)
    n1 = [n for n in data["nodes"] if n["node"] == "n1"][0]
    assert sorted(c["name"] for c in n1["checks"]) == ["gpu_count", "nccl_multi_node"]
    assert n1["gate_verdict"] == "fail" and "nccl_multi_node" in n1["gate_reason"]
