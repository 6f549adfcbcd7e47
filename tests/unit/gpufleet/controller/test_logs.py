"""The controller's log lines: text or JSON lines, the fields of an action, secrets masked."""
import io
import json

import pytest

from gpufleet.capacity.model import Action
from gpufleet.controller import logs


def test_text_lines_are_the_message_alone():
    out = io.StringIO()
    logs.Log(out)("done 7 bringup on n1: ok", decision=7, kind="bringup")
    assert out.getvalue() == "done 7 bringup on n1: ok\n"


def test_a_json_line_carries_ts_level_message_and_the_given_fields():
    out = io.StringIO()
    log = logs.Log(out, "json", clock=lambda: 1_800_000_000.25)
    log("done 7 bringup on n1: failed", "warning", **logs.action_fields(
        Action(kind="bringup", pool="lab", nodes=("n1",), reason="floor"), 7, "failed: gate", event="done"))
    record = json.loads(out.getvalue())
    assert record == {"ts": "2027-01-15T08:00:00.250Z", "level": "warning", "message": "done 7 bringup on n1: failed",
                      "event": "done", "kind": "bringup", "pool": "lab", "nodes": ["n1"], "node": "n1",
                      "decision": 7, "outcome": "failed: gate"}


def test_a_batch_names_its_decisions_and_nodes_and_no_single_node():
    fields = logs.action_fields(Action(kind="bringup", pool="lab", nodes=("n1",), reason=""), [3, 4],
                                nodes=["n1", "n2"], event="start")
    assert fields["decisions"] == [3, 4] and fields["nodes"] == ["n1", "n2"] and "node" not in fields


def test_empty_fields_are_left_out_and_a_field_cannot_replace_the_timestamp():
    out = io.StringIO()
    logs.Log(out, "json", clock=lambda: 0.0)("hello", outcome=None, nodes=[], ts="forged")
    record = json.loads(out.getvalue())
    assert record == {"ts": "1970-01-01T00:00:00.000Z", "level": "info", "message": "hello"}


@pytest.mark.parametrize("fmt, level", [("xml", "info"), ("json", "debug")])
def test_an_unknown_format_or_level_is_refused(fmt, level):
    with pytest.raises(ValueError, match="expected one of"):
        logs.Log(io.StringIO(), fmt).line("x", level)


def test_secret_named_values_at_any_depth_and_of_the_environment_are_secrets():
    found = logs.secrets_of({"vault_gpufleet_bmc_password": "bmc-pw", "site": {"api_token": "tok-1", "n": 3},
                             "bmcs": [{"secret": "s-2"}], "gpufleet_ledger": "sqlite.db", "enabled_password": True,
                             "empty_password": ""},
                            {"GPUFLEET_LEDGER_PASSWORD": "pg-pw", "HOME": "/root"})
    assert found == {"bmc-pw", "tok-1", "s-2", "pg-pw"}


@pytest.mark.parametrize("fmt", logs.FORMATS)
def test_no_secret_reaches_a_line_in_the_message_or_a_field(fmt):
    out = io.StringIO()
    log = logs.Log(out, fmt, secrets={"bmc-pw", "bmc-pw-longer"})
    log("login bmc-pw-longer failed at postgresql://ctl:pg-pw@db/gpufleet", "error", outcome="failed: bmc-pw",
        nodes=["n1 bmc-pw"])
    said = out.getvalue()
    assert "bmc-pw" not in said and "pg-pw" not in said and "longer" not in said, said
    assert "postgresql://ctl:%s@db/gpufleet" % logs.MASK in said


def test_a_stream_log_shares_its_secrets_and_format():
    out, err = io.StringIO(), io.StringIO()
    log = logs.Log(out, "json")
    other = log.to(err)
    log.secrets.add("late-token")
    other("said with late-token")
    assert json.loads(err.getvalue())["message"] == "said with %s" % logs.MASK and out.getvalue() == ""
