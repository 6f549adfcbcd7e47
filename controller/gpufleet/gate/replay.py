# -*- coding: utf-8 -*-
# Part of the gpufleet controller package (controller/gpufleet); never shipped in the collection.
"""Offline re-judging: serve a report's saved raw outputs instead of running tools.

``gpufleet gate evaluate`` judges a folder of raw outputs (``raw/<probe>.txt`` and
``raw/<probe>.<item>.txt``, the names the module writes) against any profile, through
the same phases, parsers and thresholds as a live run. A check whose output was not
saved fails closed; nothing is run.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import GateError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.phases import GateContext, run_gate
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.report import raw_name
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.runner import EMPTY, MISSING, ToolRun

__all__ = ["raw_folder", "read_inputs", "replay_collector", "evaluate"]


def raw_folder(results):
    """The ``raw`` folder of a report folder, or ``results`` itself when it holds the raw files."""
    candidate = os.path.join(results, "raw")
    if os.path.isdir(candidate):
        return candidate
    if os.path.isdir(results):
        return results
    raise GateError("Results folder %s does not exist. Pass a report folder (<report_dir>/<report_id>) or its "
                    "raw/ folder." % results, results=results)


def read_inputs(results):
    """The run's ``inputs.json`` (expected release, peers, hcas) when the folder has one, else {}."""
    path = os.path.join(results, "inputs.json")
    if not os.path.isfile(path):
        return {}
    try:
        with open(path) as handle:
            return json.load(handle)
    except (IOError, OSError, ValueError) as exc:
        raise GateError("Cannot read %s: %s. Remove or repair the file." % (path, exc), path=path)


def _files(folder, probe):
    """{suffix: path} of the probe's saved outputs (stderr files excluded)."""
    found = {}
    single = os.path.join(folder, raw_name(probe))
    if os.path.isfile(single):
        found[""] = single
    prefix = probe + "."
    for name in sorted(os.listdir(folder)):
        if name.startswith(prefix) and name.endswith(".txt") and not name.endswith(".stderr.txt"):
            found[name[len(prefix):-4]] = os.path.join(folder, name)
    return found


def replay_collector(folder):
    """A ``collect`` replacement that reads ``folder`` instead of running the probe."""
    def collect(probe, ctx):
        files = _files(folder, probe.name)
        if not files:
            return [ToolRun(probe.name, [], None, "", "", 0.0, MISSING, "%s: no saved output %s in %s" % (
                probe.name, raw_name(probe.name), folder))]
        runs = []
        for suffix, path in sorted(files.items()):
            key = probe.name + ("." + suffix if suffix else "")
            with open(path) as handle:
                text = handle.read()
            error = None if text.strip() else EMPTY
            runs.append(ToolRun(key, [path], 0, text, "", 0.0, error, "%s: %s is empty" % (key, path) if error else ""))
        return runs
    return collect


def evaluate(profile, results, expected_release=None, phases=None):
    """Re-judge saved outputs against ``profile``; returns the ``run_gate`` outcome and the inputs used."""
    folder = raw_folder(results)
    inputs = read_inputs(results if folder != results else os.path.dirname(folder))
    options = {"replay": True, "expected_release": expected_release or inputs.get("expected_release"),
               "peers": inputs.get("peers") or [], "node": inputs.get("node"), "tpm_quote": inputs.get("tpm_quote")}
    ctx = GateContext(profile, options=options, collector=replay_collector(folder))
    return run_gate(ctx, phases, run_all=True), options
