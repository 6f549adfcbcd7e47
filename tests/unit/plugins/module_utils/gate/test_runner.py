"""Runner: timeouts, missing tools and empty output fail closed; no process is started."""
import subprocess

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate import runner as gate_runner
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.runner import (
    EMPTY, MISSING, START_FAILED, TIMEOUT, Runner)


class FakeProc:
    def __init__(self, out="", err="", rc=0, hang=False):
        self.out, self.err, self.returncode, self.hang = out, err, rc, hang
        self.pid = None  # os.killpg(None, ...) raises TypeError -> falls back to kill()
        self.killed = False
        self.timeouts = []

    def communicate(self, timeout=None):
        self.timeouts.append(timeout)
        if self.hang and not self.killed:
            raise subprocess.TimeoutExpired("tool", timeout)
        return self.out, self.err

    def kill(self):
        self.killed = True

    def poll(self):
        return None if not self.killed else -9


class Clock:
    def __init__(self, step=1.5):
        self.now, self.step = 100.0, step

    def __call__(self):
        self.now += self.step
        return self.now


def make(procs, present=("/opt/bin/tool", "/usr/bin/tool"), **kwargs):
    spawned = []

    def spawn(argv, env):
        spawned.append((argv, env))
        proc = procs.pop(0)
        if isinstance(proc, Exception):
            raise proc
        return proc

    run = Runner(env={"PATH": "/usr/bin"}, spawn=spawn, clock=Clock(), sleep=lambda s: None,
                 exists=lambda p: p in present, **kwargs)
    return run, spawned


def test_success_captures_everything():
    run, spawned = make([FakeProc("out\n", "warn\n", rc=3)])
    result = run.run("probe", "tool", ["-x", 1], timeout=7)
    assert result.error is None and result.rc == 3
    assert (result.stdout, result.stderr, result.duration) == ("out\n", "warn\n", 1.5)
    assert spawned[0][0] == ["/usr/bin/tool", "-x", "1"]


def test_path_dirs_come_before_path_and_tool_paths_win():
    run, spawned = make([FakeProc("a")], path_dirs=["/opt/bin"])
    run.run("p", "tool", [], 1)
    assert spawned[0][0][0] == "/opt/bin/tool"
    assert spawned[0][1]["PATH"].split(":")[:2] == ["/opt/bin", "/usr/bin"]
    assert spawned[0][1]["LC_ALL"] == "C"
    run, spawned = make([FakeProc("a")], tool_paths={"tool": "/usr/bin/tool"}, path_dirs=["/opt/bin"])
    run.run("p", "tool", [], 1)
    assert spawned[0][0][0] == "/usr/bin/tool"


@pytest.mark.parametrize("kwargs", [{}, {"tool_paths": {"tool": "/nowhere/tool"}}])
def test_missing_tool_fails_closed(kwargs):
    run, spawned = make([], present=(), **kwargs)
    result = run.run("dcgm_diag", "tool", [], 1)
    assert result.error == MISSING and not spawned
    assert "tool tool was not found" in result.reason and "tool_paths" in result.reason


def test_timeout_kills_and_fails_closed():
    proc = FakeProc("partial", hang=True)
    run, _spawned = make([proc])
    result = run.run("gpu_burn", "tool", [], timeout=5)
    assert result.error == TIMEOUT and proc.killed and result.rc is None
    assert "did not finish within 5s" in result.reason and result.stdout == "partial"


@pytest.mark.parametrize("out,err,fragment", [("", "", "with no output"), ("  \n", "boom", "stderr: boom")])
def test_empty_output_fails_closed(out, err, fragment):
    run, _spawned = make([FakeProc(out, err, rc=0)])
    result = run.run("p", "tool", [], 1)
    assert result.error == EMPTY and fragment in result.reason


def test_start_failure_is_reported():
    run, _spawned = make([OSError(8, "Exec format error")])
    result = run.run("p", "tool", [], 1)
    assert result.error == START_FAILED and "Exec format error" in result.reason


def test_pair_runs_server_then_client_and_stops_the_server():
    server, client = FakeProc("server"), FakeProc("client out")
    run, spawned = make([server, client])
    result = run.run_pair("ib_write_bw.mlx5_0", "tool", ["-d", "mlx5_0"], ["-d", "mlx5_0", "localhost"], 9)
    assert result.stdout == "client out" and result.probe == "ib_write_bw.mlx5_0"
    assert spawned[0][0][-1] == "mlx5_0" and spawned[1][0][-1] == "localhost"
    assert server.killed


def test_pair_with_missing_tool_starts_nothing():
    run, spawned = make([], present=())
    assert run.run_pair("p", "tool", [], [], 1).error == MISSING and not spawned


def test_tail_keeps_the_end():
    assert gate_runner._tail("x" * 500 + "END").endswith("END")
