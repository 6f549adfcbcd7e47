# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Run one gate tool: locate it, enforce a timeout, capture stdout/stderr/rc/duration.

The runner never judges: it returns a ``ToolRun``. ``error`` is set when nothing usable
came back (tool missing, timeout, could not start, empty output); the phase turns that
into a failed check with the reason, never a pass. The process spawner, clock and sleep
are injectable so unit tests never start a process.

``run_sampled`` runs a sampler (``nvidia-smi ... -lms``) beside a load test and returns what it
printed until the load test ended, so clocks are read while the GPUs are under load.

A loopback pair (``run_pair``) starts its client once the server listens on a TCP socket (read
from ``/proc``), or has exited, instead of after a fixed pause; the pause stays the upper bound.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import os
import signal
import subprocess
import time

__all__ = ["ToolRun", "Runner", "MISSING", "TIMEOUT", "EMPTY", "START_FAILED", "tcp_listening"]

MISSING = "missing"
TIMEOUT = "timeout"
EMPTY = "empty"
START_FAILED = "start_failed"

ToolRun = collections.namedtuple("ToolRun", "probe argv rc stdout stderr duration error reason")


def _tail(text, limit=400):
    text = (text or "").strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def _popen(argv, env):
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            env=env, universal_newlines=True, errors="replace", start_new_session=True)


_TCP_TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
_TCP_LISTEN = "0A"  # st column of /proc/net/tcp (include/net/tcp_states.h: TCP_LISTEN = 10)
_READY_POLL = 0.05


def _read_text(path):
    with open(path) as handle:
        return handle.read()


def tcp_listening(pid, listdir=os.listdir, readlink=os.readlink, read=_read_text):
    """True when process ``pid`` holds a TCP socket in LISTEN state (Linux ``/proc``).

    False when that cannot be told (no ``/proc``, the process is gone, no pid): the caller then
    waits its full pause, as before this check existed. Read from ``/proc`` rather than with
    psutil: the gate runs on the node, where a module may use the standard library only.
    """
    try:
        fd_dir = "/proc/%d/fd" % pid
        links = [readlink(os.path.join(fd_dir, fd)) for fd in listdir(fd_dir)]
    except (OSError, TypeError):
        return False
    inodes = set(link[8:-1] for link in links if link.startswith("socket:["))
    for table in _TCP_TABLES if inodes else ():
        try:
            rows = read(table).splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 9 and fields[3] == _TCP_LISTEN and fields[9] in inodes:
                return True
    return False


class Runner:
    """Runs tools found in ``tool_paths`` (tool -> absolute path), ``path_dirs`` or PATH."""

    def __init__(self, tool_paths=None, path_dirs=(), env=None, spawn=None, clock=None, sleep=None,
                 exists=None, listening=None):
        self.tool_paths = dict(tool_paths or {})
        base_env = dict(os.environ if env is None else env)
        dirs = list(path_dirs) + [d for d in base_env.get("PATH", os.defpath).split(os.pathsep) if d]
        base_env["PATH"] = os.pathsep.join(dirs)
        # Parsers read numbers: a localized decimal comma or translated message must never reach them.
        base_env["LC_ALL"] = "C"
        self.env = base_env
        self.search = dirs
        self._spawn = spawn or _popen
        self._clock = clock or time.monotonic
        self._sleep = sleep or time.sleep
        self._exists = exists or (lambda p: os.path.isfile(p) and os.access(p, os.X_OK))
        self._listening = listening or tcp_listening

    def locate(self, tool):
        """Absolute path of ``tool`` or None."""
        if tool in self.tool_paths:
            path = self.tool_paths[tool]
            return path if self._exists(path) else None
        for folder in self.search:
            path = os.path.join(folder, tool)
            if self._exists(path):
                return path
        return None

    def _missing(self, probe, tool, args):
        where = self.tool_paths.get(tool) or os.pathsep.join(self.search)
        return ToolRun(probe, [tool] + list(args), None, "", "", 0.0, MISSING,
                       "%s: tool %s was not found (looked in %s); install it in the image or set "
                       "tool_paths/path_dirs" % (probe, tool, where))

    def run(self, probe, tool, args, timeout):
        """Run ``tool args`` with a timeout; return a ToolRun (``error`` None when output came back)."""
        path = self.locate(tool)
        if path is None:
            return self._missing(probe, tool, args)
        argv = [path] + [str(a) for a in args]
        started = self._clock()
        try:
            proc = self._spawn(argv, self.env)
        except OSError as exc:
            return ToolRun(probe, argv, None, "", "", 0.0, START_FAILED,
                           "%s: %s could not be started: %s" % (probe, path, exc))
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            out, err = self._kill(proc)
            return ToolRun(probe, argv, None, out or "", err or "", self._clock() - started, TIMEOUT,
                           "%s: %s did not finish within %ss and was killed; raise the timeout for this "
                           "probe or look for a hung GPU/driver" % (probe, tool, timeout))
        return self._finish(probe, tool, argv, proc.returncode, out, err, self._clock() - started)

    def run_pair(self, probe, tool, server_args, client_args, timeout, settle=1.0):
        """Start ``tool server_args`` in the background, run the client, then stop the server.

        Used for loopback bandwidth tests (perftest per HCA, iperf3 without peers). The
        client's output is the measurement; the server's output goes to ``stderr``. The client
        starts as soon as the server listens (or has exited: the client then fails, as it would
        have), at most ``settle`` s after the server started.
        """
        path = self.locate(tool)
        if path is None:
            return self._missing(probe, tool, client_args)
        try:
            server = self._spawn([path] + [str(a) for a in server_args], self.env)
        except OSError as exc:
            return ToolRun(probe, [path] + list(server_args), None, "", "", 0.0, START_FAILED,
                           "%s: %s server could not be started: %s" % (probe, path, exc))
        self._await_listening(server, settle)
        try:
            result = self.run(probe, tool, client_args, timeout)
        finally:
            if server.poll() is None:
                self._kill(server)
        return result

    def run_sampled(self, probe, tool, args, timeout, sampler, sampler_args, sampler_probe):
        """Run ``tool args`` while ``sampler sampler_args`` prints samples; return (tool run, sampler run).

        The sampler is stopped when the tool ends; its output up to then is the sampler run's
        stdout. A sampler that cannot start or prints nothing is a sampler run with an error.
        """
        path = self.locate(sampler)
        if path is None:
            return self.run(probe, tool, args, timeout), self._missing(sampler_probe, sampler, sampler_args)
        argv = [path] + [str(a) for a in sampler_args]
        started = self._clock()
        try:
            proc = self._spawn(argv, self.env)
        except OSError as exc:
            return self.run(probe, tool, args, timeout), ToolRun(
                sampler_probe, argv, None, "", "", 0.0, START_FAILED,
                "%s: %s could not be started: %s" % (sampler_probe, path, exc))
        try:
            result = self.run(probe, tool, args, timeout)
        finally:
            out, err = self._kill(proc) if proc.poll() is None else proc.communicate()
        return result, self._finish(sampler_probe, sampler, argv, proc.returncode, out, err, self._clock() - started)

    def _await_listening(self, server, settle):
        """Return once ``server`` listens on a TCP socket, has exited, or ``settle`` s passed."""
        deadline = self._clock() + settle
        while server.poll() is None and not self._listening(server.pid):
            left = deadline - self._clock()
            if left <= 0:
                return
            self._sleep(min(_READY_POLL, left))

    def _finish(self, probe, tool, argv, rc, out, err, duration):
        if not (out or "").strip():
            why = "exited %s with no output" % rc
            if (err or "").strip():
                why += "; stderr: %s" % _tail(err)
            return ToolRun(probe, argv, rc, out or "", err or "", duration, EMPTY, "%s: %s %s" % (probe, tool, why))
        return ToolRun(probe, argv, rc, out, err or "", duration, None, "")

    def _kill(self, proc):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (OSError, AttributeError, TypeError):
            try:
                proc.kill()
            except OSError:
                pass
        try:
            return proc.communicate(timeout=5)
        except (subprocess.TimeoutExpired, ValueError, OSError):
            return "", ""
