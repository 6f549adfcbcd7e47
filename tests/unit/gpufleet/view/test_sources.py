import json

import pytest

from gpufleet.capacity.policy import parse_policy
from gpufleet.main import main
from gpufleet.view import sources
from gpufleet.view.seam import seam
from tests.unit.gpufleet.view.history import H, T0
from tests.unit.gpufleet.view.ledger_fill import HOSTS, SINFO, SQUEUE, fill, policy, write_inputs


def test_a_filled_ledger_gives_the_same_seam_as_the_hand_made_history(tmp_path):
    book = fill(tmp_path / "ledger.sqlite")
    inputs = sources.load(book, policy(), T0 + 4 * H, json.dumps(SQUEUE), json.dumps(SINFO), hosts=HOSTS)
    book.close()
    result = seam(inputs, T0, T0 + 4 * H)["pools"]["h100"]
    assert result["owned_gpu_hours"] == 120.0 and result["busy_gpu_hours"] == 16.0
    assert [j.job_id for j in inputs.jobs] == ["101", "102"] and inputs.jobs[1].pool == "h100"
    assert inputs.decisions[-1]["action"] == "wake"


def test_without_an_inventory_pools_own_the_ledgers_nodes_their_rules_or_sku_claim(tmp_path):
    book = fill(tmp_path / "ledger.sqlite")
    by_pattern = parse_policy("pools: {p: {sku: other, members: {patterns: ['n[12]']}}}")
    by_sku = parse_policy("pools: {p: {sku: h100-sxm-8x, members: {groups: [nowhere]}}}")
    assert sources.pools_from_policy(by_pattern, book.nodes())[0].members == ("n1", "n2")
    assert sources.pools_from_policy(by_sku, book.nodes())[0].members == ("n1", "n2", "n3")
    book.close()


def test_the_planners_reason_for_never_serving_a_job_is_kept(tmp_path):
    book = fill(tmp_path / "ledger.sqlite")
    inputs = sources.load(book, policy(), T0 + 4 * H, json.dumps(SQUEUE), hosts=HOSTS)
    book.close()
    assert inputs.job_extra["102"]["unservable"] == "needs 5 nodes; pool h100 has 4 member(s)"
    assert inputs.job_extra["101"]["start_time"] == T0 + 2.5 * H


def test_missing_slurm_tool_fails_closed(monkeypatch):
    monkeypatch.setattr(sources.shutil, "which", lambda name: None)
    with pytest.raises(sources.SourceError, match="squeue is not installed.*--slurm-prefix.*--squeue-json FILE"):
        sources.run_slurm(["squeue", "--json"])


def test_why_command_prints_the_layer_and_exits_with_its_code(tmp_path, capsys):
    ledger, policy_path, squeue, sinfo, inventory = write_inputs(tmp_path)
    args = ["--ledger", ledger, "--policy", policy_path, "--squeue-json", squeue, "--sinfo-json", sinfo,
            "--inventory", inventory]
    assert main(["why", "102"] + args) == 11
    assert capsys.readouterr().out.startswith("job 102: BLOCKED at L1 capacity supply")
    assert main(["why", "101", "--json"] + args) == 0
    assert json.loads(capsys.readouterr().out)["layer"] == "L4"
    assert main(["why", "nowhere"] + args) == 1
    assert "not a job in Slurm's queue" in capsys.readouterr().err
    (tmp_path / "bad.yml").write_text("pools: {h100: {sku: x, gpus_per_node: eight, members: {groups: [a]}}}")
    assert main(["why", "102", "--ledger", ledger, "--policy", str(tmp_path / "bad.yml"), "--squeue-json", squeue,
                 "--sinfo-json", sinfo]) == 1
    assert "gpus_per_node" in capsys.readouterr().err


def test_seam_command_prints_json_for_a_period(tmp_path, capsys):
    ledger, policy_path, _squeue, _sinfo, inventory = write_inputs(tmp_path)
    period = ["--ledger", ledger, "--policy", policy_path, "--inventory", inventory, "--since", str(T0),
              "--until", str(T0 + 4 * H)]
    code = main(["seam", "--json"] + period)
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["pools"]["h100"]["paid_not_schedulable_gpu_hours"] == 96.0
    assert [b["seconds"] for b in result["time_to_schedulable"]["n1"]] == [3 * H]
    assert main(["seam"] + period) == 0
    assert "paid but not schedulable, by cause: not_enrolled 32.0, break_fix 16.0" in capsys.readouterr().out


def test_a_gang_whose_admit_failed_is_still_forming_as_the_controller_sees_it():
    from gpufleet.work import codec
    from gpufleet.work.action import Action

    def row(at, action, outcome):
        return {"at": at, "action": action.kind, "pool": action.pool, "nodes": list(action.nodes),
                "reason": action.reason, "job": action.job_id, "outcome": outcome,
                "demand": {"action": codec.encode(action)}}
    reserve = Action("reserve", "lab", ("n1", "n2"), "gang of 2", job_id="9", gang_id="9@1", deadline_at=5000.0)
    admit = Action("admit", "lab", ("n1", "n2"), "all ready", job_id="9", gang_id="9@1")
    forming = sources.decision_gangs([row(1.0, reserve, "ok"), row(2.0, admit, "failed: n2 is failed")])
    assert [(g["job"], g["status"], [m["node"] for m in g["members"]]) for g in forming] == \
        [("9", "forming", ["n1", "n2"])]
    assert sources.decision_gangs([row(1.0, reserve, "ok"), row(2.0, admit, "ok")]) == ()
