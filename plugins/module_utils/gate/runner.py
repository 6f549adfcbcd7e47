# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Run one gate tool: locate it, enforce a timeout, capture stdout/stderr/rc/duration.

The runner never judges: it returns a ``ToolRun``. ``error`` is set when nothing usable
came back (tool missing, timeout, could not start, empty output); the phase turns that
into a failed check with the reason, never a pass. The process spawner, clock and sleep
are injectable so unit tests never start a process.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import os
import signal
import subprocess
import time

__all__ = ["ToolRun", "Runner", "MISSING", "TIMEOUT", "EMPTY", "START_FAILED"]

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


class Runner:
    """Runs tools found in ``tool_paths`` (tool -> absolute path), ``path_dirs`` or PATH."""

    def __init__(self, tool_paths=None, path_dirs=(), env=None, spawn=None, clock=None, sleep=None,
                 exists=None):
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
        client's output is the measurement; the server's output goes to ``stderr``.
        """
        path = self.locate(tool)
        if path is None:
            return self._missing(probe, tool, client_args)
        try:
            server = self._spawn([path] + [str(a) for a in server_args], self.env)
        except OSError as exc:
            return ToolRun(probe, [path] + list(server_args), None, "", "", 0.0, START_FAILED,
                           "%s: %s server could not be started: %s" % (probe, path, exc))
        self._sleep(settle)
        try:
            result = self.run(probe, tool, client_args, timeout)
        finally:
            if server.poll() is None:
                self._kill(server)
        return result

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
