"""The service hooks: what the loop tells systemd, the liveness metrics and retention."""
import os
import socket
from types import SimpleNamespace

import pytest

from gpufleet.controller import records
from gpufleet.controller.errors import LeaseHeld, SchedulerOutputError
from gpufleet.controller.liveness import Liveness
from gpufleet.controller.notify import Notifier
from gpufleet.controller.retention import Retention
from gpufleet.controller.service import ServiceHooks
from tests.unit.gpufleet.controller.conftest import FakeSource
from tests.unit.gpufleet.controller.test_retention import _run


class Recorder:
    """Stands in for ServiceHooks inside the loop: the order of the calls."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *args: self.calls.append((name,) + args)


def test_the_loop_calls_ready_then_passed_each_pass_then_stopping(make_reconciler):
    rec, _runs, _p = make_reconciler()
    rec.hooks = Recorder()
    passes = []
    rec.run(0, 60, stop=lambda: passes.append(1) or len(passes) > 2)
    names = [c[0] for c in rec.hooks.calls]
    assert names == ["ready", "passed", "passed", "stopping", "stopped"]
    _name, result, started, ended = rec.hooks.calls[1]
    assert result.error is None and (started, ended) == (1000.0, 1000.0)


def test_a_skipped_pass_is_still_reported_with_its_error(make_reconciler):
    rec, _runs, _p = make_reconciler(source=FakeSource(error=SchedulerOutputError("squeue failed")))
    rec.hooks = Recorder()
    passes = []
    rec.run(0, 60, stop=lambda: passes.append(1) or len(passes) > 1)
    assert [c[0] for c in rec.hooks.calls] == ["ready", "passed", "stopping", "stopped"]


def test_a_standby_reports_waiting_while_another_holds_the_lease(ledger, make_reconciler):
    records.acquire_lease(ledger, "ctl-other", 600, 1000.0)
    rec, _runs, _p = make_reconciler()
    rec.hooks = Recorder()
    asked = []
    with pytest.raises(LeaseHeld):
        rec.take_lease(60, wait=True, stop=lambda: asked.append(1) or len(asked) > 1, poll=0)
    assert rec.hooks.calls == [("waiting", "ctl-other")]


def _hooks(tmp_path, retention=Retention(keep_runs=1), in_flight=()):
    path = str(tmp_path / "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(5)
    said = []
    hooks = ServiceHooks(Notifier({"NOTIFY_SOCKET": path}), Liveness(), retention, str(tmp_path / "runs"),
                         in_flight=lambda: in_flight, say=said.append, clock=lambda: 2_000_000_000.0, interval=10)
    return hooks, sock, said


def test_passed_feeds_the_watchdog_the_metrics_and_prunes(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    _run(runs, "ctl-1-wake", "successful", 1_000)
    _run(runs, "ctl-2-wake", "successful", 2_000)
    _run(runs, "ctl-3-wake", "successful", 3_000)
    hooks, sock, said = _hooks(tmp_path, in_flight={"ctl-1-wake"})
    with sock:
        hooks.ready()
        assert sock.recv(4096) == b"READY=1\nSTATUS=holding the lease; reconciling every 10s"
        hooks.passed(SimpleNamespace(error=None, started=[1], finished=[]), 100.0, 101.0)
        assert sock.recv(4096) == b"WATCHDOG=1\nSTATUS=last pass ok 1.0s, 1 started, 0 finished"
        hooks.passed(SimpleNamespace(error="squeue failed\ndetail"), 110.0, 111.0)
        assert sock.recv(4096) == b"WATCHDOG=1\nSTATUS=pass skipped: squeue failed"
    assert sorted(os.listdir(runs)) == ["ctl-1-wake", "ctl-3-wake"]     # ctl-1 is in flight
    assert said == ["retention: removed 1 run folder(s) under %s (oldest ctl-2-wake)" % runs]
    reg = hooks.liveness.registry
    assert reg.get_sample_value("gpufleet_controller_last_successful_pass_timestamp_seconds") == 101.0


def test_a_standby_is_ready_and_fed(tmp_path):
    hooks, sock, _said = _hooks(tmp_path)
    with sock:
        hooks.waiting("host-b:42")
        assert sock.recv(4096) == b"READY=1\nSTATUS=standby: controller host-b:42 holds the lease"
        assert sock.recv(4096) == b"WATCHDOG=1\nSTATUS=standby: controller host-b:42 holds the lease"


def test_stopping_says_so(tmp_path):
    hooks, sock, _said = _hooks(tmp_path)
    with sock:
        hooks.stopping()
        assert sock.recv(4096).startswith(b"STOPPING=1\nSTATUS=stopping")
        hooks.stopped()
