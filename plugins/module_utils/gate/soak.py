# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Reference job and soak: a command run repeatedly for a duration, one metric per iteration.

The profile gives ``command`` (run with ``/bin/sh -c``), ``metric`` (the name the command
prints as ``<metric>: <number>`` or ``<metric>=<number>``), ``duration_s`` and the floor.
Iterations run until the duration is spent, and stop early at the first iteration that
exits non-zero, prints no metric or falls below the floor. The raw output keeps every
iteration under a ``### iteration N rc=R duration_s=D`` header so it can be re-judged.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers._common import numbered_lines
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.runner import MISSING, ToolRun

__all__ = ["run_repeated", "parse_iterations", "metric_value", "HEADER"]

HEADER = re.compile(r"^### iteration (\d+) rc=(\S+) duration_s=([0-9.]+)$")
_MAX_ITERATIONS = 100000


def metric_value(text, metric):
    """The last ``<metric>: <number>`` / ``<metric>=<number>`` value in ``text`` or None."""
    pattern = re.compile(r"(?:^|[\s,{])%s\s*[:=]\s*([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)" % re.escape(metric))
    found = pattern.findall(text or "")
    return float(found[-1]) if found else None


def parse_iterations(text, tool):
    """Raw repeated-run text -> [(iteration, rc or None, body)]; raises ParseError when there is none."""
    iterations = []
    for number, line in numbered_lines(text or ""):
        match = HEADER.match(line)
        if match:
            rc = None if match.group(2) == "None" else int(match.group(2))
            iterations.append([int(match.group(1)), rc, []])
        elif iterations:
            iterations[-1][2].append(line)
        elif line.strip():
            raise ParseError(tool, "a '### iteration N rc=R duration_s=D' header", number, line)
    if not iterations:
        raise ParseError(tool, "at least one iteration", why="no iteration ran")
    return [(n, rc, "\n".join(body)) for n, rc, body in iterations]


def _settings(name, ctx):
    threshold = ctx.threshold(name)
    command = threshold.param("command") if threshold is not None else None
    metric = threshold.param("metric") if threshold is not None else None
    duration = threshold.param("duration_s", 60) if threshold is not None else 60
    floor = threshold.limit if threshold is not None else None
    return command, metric, duration, floor


def run_repeated(name, ctx):
    """Run the profile's command until its duration is spent or an iteration fails."""
    command, metric, duration, floor = _settings(name, ctx)
    if not command or not metric:
        return ToolRun(name, [], None, "", "", 0.0, MISSING,
                       "%s: the profile gives no command and metric for this check; add both" % name)
    started = ctx.clock()
    chunks, errors, last = [], [], None
    for iteration in range(1, _MAX_ITERATIONS + 1):
        last = ctx.runner.run(name, "sh", ["-c", command], ctx.timeout(name))
        body = (last.stdout or "").rstrip("\n")
        chunks.append("### iteration %d rc=%s duration_s=%.3f\n%s" % (iteration, last.rc, last.duration, body))
        if last.stderr:
            errors.append("### iteration %d\n%s" % (iteration, last.stderr.rstrip("\n")))
        value = metric_value(last.stdout, metric)
        if last.error or last.rc != 0 or value is None or (floor is not None and value < floor):
            break
        if ctx.clock() - started >= duration:
            break
    text = "\n".join(chunks) + "\n"
    error = last.error if last.error and iteration == 1 else None
    return ToolRun(name, last.argv, last.rc, text, "\n".join(errors), ctx.clock() - started, error,
                   last.reason if error else "")
