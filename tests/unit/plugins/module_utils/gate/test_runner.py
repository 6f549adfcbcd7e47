"""Runner: timeouts, missing tools and empty output fail closed; no process is started."""
import subprocess

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate import runner as gate_runner
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.runner import (
    EMPTY, MISSING, START_FAILED, TIMEOUT, Runner, tcp_listening)


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


class ExitedProc(FakeProc):
    def poll(self):
        return 0


class StepClock:
    """Moves only when the runner sleeps."""

    def __init__(self):
        self.now, self.slept = 0.0, []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def make_pair(server, answers):
    clock, spawned = StepClock(), []
    procs = [server, FakeProc("client out")]

    def spawn(argv, env):
        spawned.append(argv)
        return procs.pop(0)

    run = Runner(env={"PATH": "/usr/bin"}, spawn=spawn, clock=clock, sleep=clock.sleep,
                 exists=lambda p: True, listening=lambda pid: answers.pop(0) if answers else False)
    return run, clock, spawned


@pytest.mark.parametrize("server,answers,slept", [
    (FakeProc("server"), [False, False, True], 2),   # the client starts once the server listens
    (ExitedProc("server"), [], 0),                   # a server that exited: no pause (the client says why)
    (FakeProc("server"), [], 20),                    # never listening: the pause, no longer (1 s / 0.05 s)
])
def test_pair_starts_the_client_when_the_server_listens(server, answers, slept):
    run, clock, spawned = make_pair(server, answers)
    result = run.run_pair("iperf3_tcp", "tool", ["-s"], ["-c", "127.0.0.1"], 9, settle=1.0)
    assert result.stdout == "client out" and len(spawned) == 2
    assert len(clock.slept) == slept and sum(clock.slept) <= 1.0 + 1e-9


TCP_TABLE = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1451 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4711 1 0
   1: 0100007F:9C40 0100007F:1451 01 00000000:00000000 00:00000000 00000000     0        0 4712 1 0
"""


@pytest.mark.parametrize("links,listening", [
    (["socket:[4711]", "/dev/null"], True),     # a LISTEN row (st 0A) with the process's inode
    (["socket:[4712]"], False),                 # the process's socket is an established connection
    (["pipe:[4711]", "/dev/null"], False),      # no socket at all
])
def test_tcp_listening_reads_the_process_sockets_from_proc(links, listening):
    fds = dict((str(n), link) for n, link in enumerate(links))

    def read(path):
        return TCP_TABLE if path == "/proc/net/tcp" else TCP_TABLE.splitlines()[0] + "\n"

    assert tcp_listening(42, listdir=lambda d: sorted(fds), readlink=lambda p: fds[p.rsplit("/", 1)[1]],
                         read=read) is listening


def test_tcp_listening_is_false_when_it_cannot_tell():
    def gone(path):
        raise OSError(2, "No such file or directory", path)

    assert tcp_listening(None) is False
    assert tcp_listening(42, listdir=gone) is False


def test_pair_with_missing_tool_starts_nothing():
    run, spawned = make([], present=())
    assert run.run_pair("p", "tool", [], [], 1).error == MISSING and not spawned


def test_tail_keeps_the_end():
    assert gate_runner._tail("x" * 500 + "END").endswith("END")


def test_run_sampled_returns_what_the_sampler_printed_while_the_tool_ran():
    sampler = FakeProc("index, clocks.sm [MHz]\n0, 1410 MHz\n")
    run, spawned = make([sampler, FakeProc("Tested 1 GPUs:\n")])
    burn, samples = run.run_sampled("gpu_burn", "tool", ["60"], 90, "tool", ["-lms", "500"], "gpu_burn.clocks_samples")
    assert burn.error is None and burn.probe == "gpu_burn"
    assert samples.probe == "gpu_burn.clocks_samples" and samples.stdout.startswith("index")
    assert sampler.killed  # still running when the tool ended: stopped
    assert [argv for argv, _env in spawned] == [["/usr/bin/tool", "-lms", "500"], ["/usr/bin/tool", "60"]]


def test_run_sampled_without_the_sampler_tool_still_runs_the_tool():
    run, _spawned = make([FakeProc("out\n")], present=("/usr/bin/tool",))
    burn, samples = run.run_sampled("gpu_burn", "tool", [], 9, "nvidia-smi", [], "gpu_burn.clocks_samples")
    assert burn.error is None and samples.error == MISSING and "nvidia-smi was not found" in samples.reason
