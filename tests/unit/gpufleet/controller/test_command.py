"""`gpufleet controller` end to end on a fake Slurm (a script printing the real 22.05 fixtures)."""
import os
import sys

from gpufleet.controller import records
from gpufleet.main import main
from tests.unit.gpufleet.inventory_once import shipped_inventory_once  # noqa: F401 (an autouse fixture)

HERE = os.path.dirname(__file__)
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
FAKE = """import sys
name = {"squeue": "squeue-22.05-pending.json", "sinfo": "sinfo-22.05-cloud-unregistered.json"}[sys.argv[1]]
sys.stdout.write(open(%r + "/" + name).read())
"""


def args(tmp_path, *extra):
    fake = tmp_path / "fake_slurm.py"
    fake.write_text(FAKE % os.path.join(HERE, "fixtures"))
    return ["controller"] + list(extra) + [
        "--policy", os.path.join(ROOT, "lab", "config", "capacity.yml"),
        "-i", os.path.join(ROOT, "inventories", "lab.rack.yml"),
        "--ledger", str(tmp_path / "ledger.sqlite"), "--slurm-prefix", "%s %s" % (sys.executable, fake)]


def test_dry_run_prints_the_plan_for_the_lab_and_records_nothing(tmp_path, capsys):
    assert main(args(tmp_path, "once", "--dry-run")) == 0
    out = capsys.readouterr().out
    assert "bringup" in out and "lab-r1n1" in out, out
    led = records.open_ledger(str(tmp_path / "ledger.sqlite"))
    assert records.decisions(led) == [] and records.demand_history(led) == []


def test_status_shows_pools_tiers_demand_and_the_lease(tmp_path, capsys):
    assert main(args(tmp_path, "status")) == 0
    out = capsys.readouterr().out
    assert "lease: free" in out and "\nlab " in out and "in flight: nothing" in out, out


def test_a_broken_scheduler_fails_the_pass_with_its_reason(tmp_path, capsys):
    argv = args(tmp_path, "once", "--dry-run")
    argv[argv.index("--slurm-prefix") + 1] = "false"
    assert main(argv) == 1
    assert "squeue --json --all failed" in capsys.readouterr().out


def test_a_bad_policy_is_one_error_naming_the_fix_and_nothing_runs(tmp_path, capsys):
    bad = tmp_path / "policy.yml"
    bad.write_text("pools: {lab: {sku: lab, members: {}}}\n")
    argv = args(tmp_path, "once")
    argv[argv.index("--policy") + 1] = str(bad)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "members" in err and "fix:" in err, err
    assert not (tmp_path / "ledger.sqlite").exists()


def _learned_policy(tmp_path):
    import yaml
    with open(os.path.join(ROOT, "lab", "config", "capacity.yml")) as handle:
        data = yaml.safe_load(handle)
    for pool in data["pools"].values():
        pool["forecast"] = dict(pool.get("forecast") or {}, enabled=True, method="learned")
    path = tmp_path / "learned.yml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_a_learned_forecast_without_history_runs_on_its_fallback_and_status_says_why(tmp_path, capsys):
    for command in ("status", "once"):
        argv = args(tmp_path, command, *(("--dry-run",) if command == "once" else ()))
        argv[argv.index("--policy") + 1] = _learned_policy(tmp_path)
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert "forecast.method: no demand history before the split" in out or "scikit-learn" in out, out
        assert "the seasonal forecast is used" in out, out
        if command == "status":
            assert "learned forecast: pool lab: " in out, out
        else:
            assert "'fallback_from': 'learned'" in out, out


def test_status_json_carries_each_learned_pools_model_or_why_not(tmp_path, capsys):
    import json
    argv = args(tmp_path, "status", "--json")
    argv[argv.index("--policy") + 1] = _learned_policy(tmp_path)
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert list(doc["learned_forecast"]) == ["lab"]
    assert "the seasonal forecast is used" in doc["learned_forecast"]["lab"]
