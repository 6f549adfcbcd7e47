import argparse
import io

import pytest

from gpufleet.commands import run


def event(kind, host, action="ansible.builtin.command", task="t", **res):
    return {"event": kind, "event_data": {"host": host, "task": task, "task_action": action, "res": res}}


def test_progress_prints_one_line_per_state_change_and_failure():
    out = io.StringIO()
    ticks = iter([0.0, 1.0, 2.0, 3.0, 4.0])
    progress = run.Progress(out, clock=lambda: next(ticks))
    progress(event("runner_on_ok", "n1", "gpufleet.baremetal.node_state", "Record imaging", state="imaging"))
    progress(event("runner_on_ok", "n1", "gpufleet.baremetal.node_state", "Record imaging", state="imaging"))
    progress(event("runner_on_ok", "localhost", "gpufleet.baremetal.gang", state="planned"))
    progress(event("runner_on_failed", "n2", task="Run the acceptance gate", msg="gate failed: nvlink\nmore"))
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert "n1" in lines[0] and "imaging" in lines[0] and "Record imaging" in lines[0]
    assert "FAILED" in lines[1] and "gate failed: nvlink" in lines[1] and "more" not in lines[1]
    summary = progress.summary()
    assert "n1             imaging        ok" in summary and "n2" in summary and "FAILED" in summary


def test_ignored_errors_are_not_failures():
    progress = run.Progress(io.StringIO(), clock=lambda: 0.0)
    data = event("runner_on_failed", "n1", msg="x")
    data["event_data"]["ignore_errors"] = True
    progress(data)
    assert progress.nodes["n1"]["failed"] is False


def test_extra_vars_parse_yaml_values_and_files():
    values, files = run._extra_vars(["gpufleet_gang_size=8", "name=demo", "@x.yml", "flag=true"])
    assert values == {"gpufleet_gang_size": 8, "name": "demo", "flag": True}
    assert files[0].endswith("x.yml")


def test_bad_extra_var_and_unknown_playbook_are_clear_errors():
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError
    with pytest.raises(GpufleetError):
        run._extra_vars(["novalue"])
    with pytest.raises(GpufleetError) as err:
        run._playbook("nope")
    assert "enroll, bringup, gang" in err.value.msg


def test_playbook_names_resolve_to_the_collection_playbooks():
    assert run._playbook("gang").endswith("playbooks/gang.yml")


def test_gang_admission_updates_every_member():
    out = io.StringIO()
    progress = run.Progress(out, clock=lambda: 0.0)
    progress(event("runner_on_ok", "n1", "gpufleet.baremetal.node_state", "Record ready", state="ready"))
    progress(event("runner_on_ok", "localhost", "gpufleet.baremetal.gang", "Record every member joined",
                   gang={"gang_id": "g", "status": "admitted",
                         "members": [{"node": "n1", "state": "joined"}, {"node": "n2", "state": "joined"}]}))
    assert progress.nodes["n1"]["state"] == "joined" and progress.nodes["n2"]["state"] == "joined"
    assert "gang g admitted" in out.getvalue()


def test_extra_vars_refuse_a_key_twice_and_bad_yaml():
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError
    with pytest.raises(GpufleetError) as err:
        run._extra_vars(["gang={size: 8, size: 16}"])
    assert err.value.msg == ("extra variable 'gang={size: 8, size: 16}' line 1: key 'size' appears twice (first on "
                             "line 1); fix: keep one of the two keys. Quote the value if it is text.")
    with pytest.raises(GpufleetError, match="not valid YAML"):
        run._extra_vars(["gang=[8"])


def test_a_variable_file_with_a_key_twice_stops_the_run_before_it_starts(tmp_path, monkeypatch):
    from gpufleet import lab_target, playbook_runner
    path = tmp_path / "vars.yml"
    path.write_text("gpufleet_gang_size: 8\ngpufleet_gang_size: 16\n")
    monkeypatch.setattr(playbook_runner, "run_playbook", lambda *a, **k: pytest.fail("the playbook ran"))
    args = argparse.Namespace(playbook="gang", extra_vars=["@%s" % path], lab=False, run_id="r1",
                              inventory=str(tmp_path / "rack.yml"), limit=None)
    with pytest.raises(lab_target.VarsFileError, match="key 'gpufleet_gang_size' appears twice"):
        run.run(args, out=io.StringIO())
