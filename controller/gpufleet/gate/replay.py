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

import io
import json
import os
import stat

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import GateError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.phases import GateContext, run_gate
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.report import raw_name
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.runner import EMPTY, MISSING, ToolRun

__all__ = ["raw_folder", "read_inputs", "replay_collector", "evaluate", "MAX_RAW_BYTES", "MAX_INPUTS_BYTES"]

# The largest real outputs are kernel logs of long-running nodes (a few MiB) and gpu-burn
# progress logs (57 KiB for 8 GPUs in the shared captures); 64 MiB bounds a link to /dev/zero
# or a runaway log without refusing any real capture.
MAX_RAW_BYTES = 64 * 1024 * 1024
MAX_INPUTS_BYTES = 16 * 1024 * 1024  # inputs.json holds a few KiB (release values, peers, firmware)

_FILE_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"))
# inputs.json keys the replay reads: (type, what it must be).
_INPUT_KINDS = (("expected_release", dict, 'an object of KEY: "value" (the signed manifest\'s values)'),
                ("peers", list, "a list of host names"),
                ("node", str, "a host name"),
                ("tpm_quote", dict, "an object (nonce, pcrs, expected_pcrs)"))


def raw_folder(results):
    """The ``raw`` folder of a report folder, or ``results`` itself when it holds the raw files."""
    candidate = os.path.join(results, "raw")
    if os.path.isdir(candidate):
        return candidate
    if os.path.isdir(results):
        return results
    raise GateError("Results folder %s does not exist. Pass a report folder (<report_dir>/<report_id>) or its "
                    "raw/ folder." % results, results=results)


def _read_bounded(path, limit, fix):
    """The bytes of ``path``, a regular file of at most ``limit`` bytes; GateError naming it otherwise."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise GateError("Cannot read %s (%s). %s" % (path, exc.strerror or exc, fix), path=path)
    kind = [name for test, name in _FILE_KINDS if test(info.st_mode)]
    if kind or not stat.S_ISREG(info.st_mode):
        raise GateError("%s is %s, not a regular file, so it is not read. %s" % (
            path, kind[0] if kind else "not a regular file", fix), path=path)
    if info.st_size > limit:
        raise GateError("%s is %d bytes, above the %d MiB this command reads. %s" % (
            path, info.st_size, limit // (1024 * 1024), fix), path=path)
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)  # a file that grows while read stays bounded
    except OSError as exc:
        raise GateError("Cannot read %s (%s). %s" % (path, exc.strerror or exc, fix), path=path)
    if len(data) > limit:
        raise GateError("%s holds more than %d MiB. %s" % (path, limit // (1024 * 1024), fix), path=path)
    return data


def read_raw(path):
    """A saved tool output as text, read like the live runner reads a tool's stdout.

    Undecodable bytes become U+FFFD (real kernel logs hold them) and parsing goes on;
    ``\r\n`` and ``\r`` become ``\n`` (universal newlines, as the runner's pipes).
    """
    data = _read_bounded(path, MAX_RAW_BYTES, "Replace it with the tool's saved output (a text file) or remove it.")
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace", newline=None).read()


def read_inputs(results):
    """The run's ``inputs.json`` (expected release, peers, node, TPM quote settings) when present, else {}."""
    path = os.path.join(results, "inputs.json")
    if not os.path.lexists(path):
        return {}
    fix = "Repair it (the acceptance_gate module writes it as a JSON object) or remove it and pass --expect."
    data = _read_bounded(path, MAX_INPUTS_BYTES, fix)
    try:
        document = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise GateError("Cannot read %s: not UTF-8 text (byte %d). %s" % (path, exc.start, fix), path=path)
    except ValueError as exc:
        raise GateError("Cannot read %s: not valid JSON (%s). %s" % (path, exc, fix), path=path)
    except RecursionError:
        raise GateError("Cannot read %s: JSON nested too deeply. %s" % (path, fix), path=path)
    return _checked_inputs(document, path, fix)


def _checked_inputs(document, path, fix):
    """``document`` when every key the replay reads has the type the module writes; else GateError."""
    if not isinstance(document, dict):
        raise GateError("%s holds a JSON %s, not an object. %s" % (path, _json_type(document), fix), path=path)
    for key, kind, what in _INPUT_KINDS:
        value = document.get(key)
        if value is not None and not isinstance(value, kind):
            raise GateError('%s: "%s" is a JSON %s; it must be %s. %s' % (
                path, key, _json_type(value), what, fix), path=path, key=key)
    problem = _inner_problem(document)
    if problem:
        raise GateError("%s: %s. %s" % (path, problem, fix), path=path)
    return document


def _inner_problem(document):
    release = document.get("expected_release") or {}
    for key, value in sorted(release.items()):
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            return '"expected_release.%s" is a JSON %s; it must be a string' % (key, _json_type(value))
    peers = document.get("peers") or []
    if not all(isinstance(peer, str) and peer for peer in peers):
        return '"peers" must list host names (non-empty strings)'
    quote = document.get("tpm_quote") or {}
    for key, kind, what in (("nonce", str, "a hex string"), ("pcrs", str, 'a PCR selection such as "sha256:0,7"'),
                            ("expected_pcrs", dict, "an object of PCR: digest")):
        if quote.get(key) is not None and not isinstance(quote[key], kind):
            return '"tpm_quote.%s" is a JSON %s; it must be %s' % (key, _json_type(quote[key]), what)
    return None


def _json_type(value):
    names = ((bool, "boolean"), (dict, "object"), (list, "array"), (str, "string"), ((int, float), "number"))
    for kind, name in names:
        if isinstance(value, kind):
            return name
    return "null"


def _files(folder, probe):
    """{suffix: path} of the probe's saved outputs (stderr files excluded); every one must be readable later."""
    found = {}
    prefix = probe + "."
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        raise GateError("Cannot list %s (%s). Check the folder and its permissions." % (folder, exc.strerror or exc),
                        path=folder)
    for name in names:
        if name == raw_name(probe):
            found[""] = os.path.join(folder, name)
        elif name.startswith(prefix) and name.endswith(".txt") and not name.endswith(".stderr.txt"):
            found[name[len(prefix):-4]] = os.path.join(folder, name)
    for path in found.values():
        try:
            os.path.basename(path).encode("utf-8")
        except UnicodeEncodeError:  # its name would reach the report and the terminal
            raise GateError("The raw file name %s is not UTF-8 text. Rename it to %s.<item>.txt." % (
                ascii(path), probe), path=ascii(path))
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
            text = read_raw(path)
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
