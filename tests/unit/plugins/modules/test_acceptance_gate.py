"""acceptance_gate module: argspec matches DOCUMENTATION, check mode runs nothing, result shape."""
import json

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate import gate_run
from ansible_collections.gpufleet.baremetal.plugins.modules import acceptance_gate

PROFILE = {"profile": "unit", "checks": {"gpu_count": {"equals": 8, "unit": "count"},
                                         "fio_seq_read": {"min": 50, "unit": "MB/s"}}}
RELEASE = 'VERSION="2026.06.2"\nBUILD_ID="b1"\nPINS_SHA256="abc"\n'


def run(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit) as exited:
        acceptance_gate.main()
    return json.loads(capsys.readouterr().out), exited.value.code


def test_argspec_matches_documentation():
    doc = yaml.safe_load(acceptance_gate.DOCUMENTATION)["options"]
    spec = gate_run.argument_spec()
    assert sorted(doc) == sorted(spec)
    for name, option in spec.items():
        assert doc[name]["type"] == option["type"], name
        assert doc[name].get("default") == option.get("default"), name
        assert doc[name].get("choices") == option.get("choices"), name
        assert doc[name].get("elements") == option.get("elements"), name
        assert bool(doc[name].get("required")) == bool(option.get("required")), name


def test_examples_and_return_are_yaml():
    assert len(yaml.safe_load(acceptance_gate.EXAMPLES)) == 3
    returned = yaml.safe_load(acceptance_gate.RETURN)
    for key in ("verdict", "report_id", "report_path", "failed_phase", "failed_check", "reason", "summary",
                "report", "plan"):
        assert key in returned


def test_check_mode_lists_probes_and_writes_nothing(capsys, tmp_path):
    profile = dict(PROFILE, checks=dict(PROFILE["checks"], ib_write_bw={"min": 300, "unit": "Gb/s"}))
    result, code = run(capsys, profile=profile, report_dir=str(tmp_path / "reports"), _ansible_check_mode=True,
                       node="n1", storage_dir=str(tmp_path / "fio"), hcas=["mlx5_0", "mlx5_1"])
    assert code == 0 and result["verdict"] is None and result["changed"] is True
    plan = dict((p["phase"], p["probes"]) for p in result["plan"])
    assert plan["gpu"][0]["probe"] == "nvidia_smi_query" and plan["gpu"][0]["tool"] == "nvidia-smi"
    assert plan["storage"][0]["args"][1] == "--rw=read"
    assert plan["attestation"][0]["checks"] == ["image_release"]
    assert plan["fabric"][0]["hcas"] == ["mlx5_0", "mlx5_1"] and "--report_gbits" in plan["fabric"][0]["args"]
    assert not (tmp_path / "reports").exists() and "diff" not in result


def test_fail_verdict_fails_the_task_and_writes_the_report(capsys, tmp_path):
    release = tmp_path / "image-release"
    release.write_text(RELEASE)
    result, code = run(capsys, profile=PROFILE, report_dir=str(tmp_path), node="n1", phases=["attestation", "gpu"],
                       image_release_path=str(release), expected_release={"VERSION": "2026.06.2"},
                       tool_paths={"nvidia-smi": str(tmp_path / "no-such-tool")}, _ansible_diff=True)
    assert code == 1 and result["verdict"] == "fail"
    assert result["msg"].startswith("Acceptance gate failed for node n1 at phase gpu, check gpu_count: ")
    assert "was not found" in result["msg"]
    latest = json.loads((tmp_path / "latest.json").read_text())
    assert latest["report_id"] == result["report_id"] and latest["image_version"] == "2026.06.2"
    assert result["diff"]["before"] == {"report_id": None, "verdict": None}
    assert (tmp_path / result["report_id"] / "junit.xml").exists()


def test_fail_on_verdict_false_returns_the_verdict(capsys, tmp_path):
    result, code = run(capsys, profile=PROFILE, report_dir=str(tmp_path), node="n1", phases=["attestation"],
                       image_release_path=str(tmp_path / "missing"), fail_on_verdict=False)
    assert code == 0 and result["verdict"] == "fail" and result["failed_check"] == "image_release"
    assert "cannot read" in result["reason"] and result["summary"].startswith("PHASE")


def test_invalid_profile_fails_with_the_key(capsys, tmp_path):
    result, code = run(capsys, profile={"profile": "bad", "checks": {"gpu_cuont": {"equals": 8, "unit": "count"}}},
                       report_dir=str(tmp_path))
    assert code == 1 and "checks.gpu_cuont" in result["msg"] and "unknown check" in result["msg"]
    result, code = run(capsys, profile=7, report_dir=str(tmp_path))
    assert code == 1 and "profile must be a mapping" in result["msg"]


def test_unwritable_report_dir_is_a_clear_failure(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result, code = run(capsys, profile=PROFILE, report_dir=str(blocker / "sub"), phases=["attestation"])
    assert code == 1 and "could not write its report under" in result["msg"]


def test_report_id_is_sortable_and_unique():
    first = gate_run.new_report_id("n1", now=0, token="aaaaaa")
    assert first == "n1-19700101T000000Z-aaaaaa"
    assert gate_run.new_report_id("n1") != gate_run.new_report_id("n1")
