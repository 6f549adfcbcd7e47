"""``--lab`` and ``--slurm-prefix`` for why / seam / report --fleet: where the ledger, the
inventory and Slurm's commands come from."""
import argparse

import pytest

from gpufleet import lab_target
from gpufleet.view import cli, sources


def _args(*argv, slurm=True):
    parser = argparse.ArgumentParser()
    cli.add_input_arguments(parser, slurm=slurm)
    return parser.parse_args(list(argv))


@pytest.fixture
def lab_vars(tmp_path, monkeypatch):
    path = tmp_path / "vars.yml"
    path.write_text("gpufleet_ledger: /lab/state/ledger.sqlite\ngpufleet_slurm_controller_host: gpufleet-lab-slurmctld\n")
    monkeypatch.setattr(lab_target, "vars_path", lambda: str(path))
    return path


def test_lab_fills_ledger_inventory_and_runs_slurm_in_the_container(lab_vars):
    args = _args("--lab", "--policy", "p.yml")
    assert cli._resolve_lab(args, slurm=True) == ["docker", "exec", "gpufleet-lab-slurmctld"]
    assert args.ledger == "/lab/state/ledger.sqlite" and args.inventory == lab_target.inventory_path()


def test_flags_win_over_the_lab(lab_vars):
    args = _args("--lab", "--policy", "p.yml", "--ledger", "/mine.sqlite", "--slurm-prefix", "ssh ctl")
    assert cli._resolve_lab(args, slurm=True) == ["ssh", "ctl"] and args.ledger == "/mine.sqlite"


def test_seam_reads_no_slurm_so_gets_no_prefix(lab_vars):
    assert cli._resolve_lab(_args("--lab", "--policy", "p.yml", slurm=False), slurm=False) == []


def test_no_ledger_and_no_lab_is_an_error_naming_both_fixes():
    with pytest.raises(ValueError) as err:
        cli._resolve_lab(_args("--policy", "p.yml"), slurm=True)
    assert "--ledger" in str(err.value) and "--lab" in str(err.value)


def test_lab_without_a_running_lab_says_to_start_one(tmp_path, monkeypatch):
    monkeypatch.setattr(lab_target, "vars_path", lambda: str(tmp_path / "missing.yml"))
    with pytest.raises(LookupError) as err:
        cli._resolve_lab(_args("--lab", "--policy", "p.yml"), slurm=True)
    assert "gpufleet lab up" in str(err.value)


def test_squeue_and_sinfo_run_behind_the_prefix(lab_vars, monkeypatch):
    ran = []
    monkeypatch.setattr(sources, "run_slurm", lambda argv, prefix: ran.append(list(prefix) + argv) or "{}")
    monkeypatch.setattr(sources, "open_ledger", lambda path: (_ for _ in ()).throw(sources.SourceError("stop")))
    monkeypatch.setattr(cli, "load_policy", lambda path: None)
    with pytest.raises(sources.SourceError):
        cli.inputs_from_args(_args("--lab", "--policy", "p.yml"), now=0.0)
    assert ran == [["docker", "exec", "gpufleet-lab-slurmctld", "squeue", "--json"],
                   ["docker", "exec", "gpufleet-lab-slurmctld", "sinfo", "--json"]]


def test_a_missing_prefix_command_is_named_as_the_prefix(monkeypatch):
    monkeypatch.setattr(sources.shutil, "which", lambda name: None)
    with pytest.raises(sources.SourceError) as err:
        sources.run_slurm(["squeue", "--json"], ["sshx", "ctl"])
    assert "sshx (the start of --slurm-prefix)" in err.value.args[0] and "--squeue-json" in err.value.args[0]
