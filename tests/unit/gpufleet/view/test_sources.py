import json

import pytest
import yaml

from gpufleet.main import main
from gpufleet.view import sources
from gpufleet.view.seam import seam
from tests.unit.gpufleet.view.history import H, T0
from tests.unit.gpufleet.view.ledger_fill import POLICY, SINFO, SQUEUE, fill, write_inputs


def test_a_filled_ledger_gives_the_same_seam_as_the_hand_made_history(tmp_path):
    book = fill(tmp_path / "ledger.sqlite")
    inputs = sources.load(book, yaml.safe_load(POLICY), T0 + 4 * H, json.dumps(SQUEUE), json.dumps(SINFO))
    book.close()
    result = seam(inputs, T0, T0 + 4 * H)["pools"]["h100"]
    assert result["owned_gpu_hours"] == 120.0 and result["busy_gpu_hours"] == 16.0
    assert [j.job_id for j in inputs.jobs] == ["101", "102"] and inputs.jobs[1].pool == "h100"
    assert inputs.decisions[-1]["action"] == "wake"


def test_a_pool_without_members_owns_the_ledgers_nodes_of_its_sku(tmp_path):
    book = fill(tmp_path / "ledger.sqlite")
    [pool] = sources.pools_from_policy({"pools": {"p": {"sku": "h100-sxm-8x", "gpus_per_node": 8}}}, book.nodes())
    book.close()
    assert pool.members == ("n1", "n2", "n3")


@pytest.mark.parametrize("policy, words", [
    ({}, "no pools mapping"),
    ({"pools": {"p": {"sku": "x", "gpus_per_node": "eight"}}}, "field gpus_per_node is 'eight'"),
])
def test_a_bad_policy_names_the_field(policy, words):
    with pytest.raises(sources.SourceError, match=words):
        sources.pools_from_policy(policy, [])


def test_missing_slurm_tool_fails_closed(monkeypatch):
    monkeypatch.setattr(sources.shutil, "which", lambda name: None)
    with pytest.raises(sources.SourceError, match="squeue is not installed.*pass --squeue-json FILE"):
        sources.run_slurm(["squeue", "--json"])


def test_why_command_prints_the_layer_and_exits_with_its_code(tmp_path, capsys):
    ledger, policy, squeue, sinfo = write_inputs(tmp_path)
    args = ["--ledger", ledger, "--policy", policy, "--squeue-json", squeue, "--sinfo-json", sinfo]
    assert main(["why", "102"] + args) == 11
    assert capsys.readouterr().out.startswith("job 102: BLOCKED at L1 capacity supply")
    assert main(["why", "101", "--json"] + args) == 0
    assert json.loads(capsys.readouterr().out)["layer"] == "L4"
    assert main(["why", "nowhere"] + args) == 1
    assert "not a job in Slurm's queue" in capsys.readouterr().err


def test_seam_command_prints_json_for_a_period(tmp_path, capsys):
    ledger, policy, _squeue, _sinfo = write_inputs(tmp_path)
    code = main(["seam", "--ledger", ledger, "--policy", policy, "--since", str(T0), "--until", str(T0 + 4 * H),
                 "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["pools"]["h100"]["paid_not_schedulable_gpu_hours"] == 96.0
    assert [b["seconds"] for b in result["time_to_schedulable"]["n1"]] == [3 * H]
    assert main(["seam", "--ledger", ledger, "--policy", policy, "--since", str(T0), "--until", str(T0 + 4 * H)]) == 0
    assert "paid but not schedulable, by cause: not_enrolled 32.0, break_fix 16.0" in capsys.readouterr().out
