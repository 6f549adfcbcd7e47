"""The reconcile loop's lines in JSON: each line about an action names its decision, kind, pool, nodes, outcome."""
import io
import json

from gpufleet.capacity.model import Job
from gpufleet.controller import logs
from gpufleet.controller.errors import SchedulerOutputError
from tests.unit.gpufleet.controller.conftest import FakeSource, Runs, bringup


def lines(out):
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_started_and_finished_bringup_is_said_with_its_fields(ledger, make_reconciler):
    rec, runs, _p = make_reconciler([bringup("n1", "n2")], jobs=[Job("7", 2, partition="batch")],
                                    runs=Runs(rc=2))
    out = io.StringIO()
    rec.out = logs.Log(out, "json")
    rec.once()
    rec.drain()
    said = {line["event"]: line for line in lines(out) if "event" in line}
    start, done = said["start"], said["done"]
    assert start["decisions"] == [done["decision"]] and start["kind"] == "bringup" and start["pool"] == "lab"
    assert start["nodes"] == ["n1", "n2"] and "node" not in start and start["level"] == "info"
    assert done["outcome"].startswith("failed") and done["level"] == "warning", done
    assert done["nodes"] == ["n1", "n2"] and done["message"].startswith("done %d bringup on n1,n2" % done["decision"])


def test_a_skipped_pass_is_an_error_line(ledger, make_reconciler):
    rec, _runs, _p = make_reconciler(source=FakeSource(error=SchedulerOutputError("squeue failed")))
    out = io.StringIO()
    rec.out = logs.Log(out, "json")
    assert rec.once().error
    line, = lines(out)
    assert line["level"] == "error" and line["event"] == "pass_skipped" and "squeue failed" in line["message"]


def test_a_plain_stream_still_gets_the_text_lines(ledger, make_reconciler):
    rec, _runs, _p = make_reconciler([bringup("n1")], jobs=[Job("7", 1, partition="batch")])
    rec.out = io.StringIO()
    rec.once()
    rec.drain()
    assert "start 1 bringup on n1: hot floor 2, have 0\n" in rec.out.getvalue()
