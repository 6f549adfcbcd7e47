"""Where run artifacts and reports go: flag/config, $STATE_DIRECTORY, systemd default, build/."""
import os

import pytest

from gpufleet import state_dir


@pytest.fixture(autouse=True)
def _reset():
    yield
    state_dir.configure(None)


def test_an_explicit_path_wins_over_systemd(tmp_path):
    env = {"STATE_DIRECTORY": "/var/lib/gpufleet", "INVOCATION_ID": "x"}
    assert state_dir.resolve(str(tmp_path), environ=env, ppid=1, checkout_build="/co/build") == (
        str(tmp_path), "configured")


def test_systemd_state_directory_first_path():
    env = {"STATE_DIRECTORY": "/var/lib/gpufleet:/var/lib/other"}
    assert state_dir.resolve(None, environ=env, ppid=4242, checkout_build="/co/build") == (
        "/var/lib/gpufleet", "$STATE_DIRECTORY")


def test_a_unit_without_state_directory_gets_var_lib_never_the_code():
    assert state_dir.resolve(None, environ={"INVOCATION_ID": "abc"}, ppid=1, checkout_build="/co/build")[0] == \
        state_dir.SERVICE_DEFAULT


def test_a_terminal_inside_a_desktop_unit_is_not_the_service():
    # the shell inherits $INVOCATION_ID from its terminal's unit, but its parent is not PID 1
    assert state_dir.resolve(None, environ={"INVOCATION_ID": "abc"}, ppid=4242, checkout_build="/co/build") == (
        "/co/build", "checkout build/")


def test_developers_and_the_lab_keep_the_checkout_build_dir():
    path, source = state_dir.resolve(None, environ={}, ppid=4242)
    assert path.endswith(os.sep + "build") and source == "checkout build/"


def test_configure_moves_runs_and_reports(tmp_path):
    state_dir.configure(str(tmp_path), "configured")
    assert state_dir.runs_dir("ctl-1-wake") == str(tmp_path / "runs" / "ctl-1-wake")
    assert state_dir.reports_dir() == str(tmp_path / "reports")
    state_dir.configure(None)
    assert state_dir.current()[0] != str(tmp_path)


def test_playbook_runs_use_the_state_dir(tmp_path, monkeypatch):
    import ansible_runner

    from gpufleet import playbook_runner
    seen = {}

    def fake_run(**kw):
        seen.update(kw)
        return type("R", (), {"status": "successful", "rc": 0})()
    monkeypatch.setattr(ansible_runner, "run", fake_run)
    state_dir.configure(str(tmp_path))
    _status, _rc, artifacts = playbook_runner.run_playbook("park", str(tmp_path / "inv.yml"), "ctl-7-park")
    assert seen["private_data_dir"] == str(tmp_path / "runs" / "ctl-7-park")
    assert artifacts.startswith(str(tmp_path / "runs" / "ctl-7-park"))
