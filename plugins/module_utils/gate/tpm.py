# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""TPM 2.0 quote over chosen PCRs with a fresh nonce (tpm2-tools 5.x), checked against expected values.

The node creates an endorsement key and an attestation key (AK), quotes the PCRs with the
controller's nonce, and verifies the quote's signature and nonce with ``tpm2_checkquote``.
The check passes only when the signature verifies, the nonce is the one given and every
expected PCR value matches. The raw output keeps the quote, the verification and the AK
public key (PEM), so the controller can also verify the quote against an AK it enrolled.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import binascii
import os
import re
import shutil
import tempfile

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers._common import numbered_lines
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.judging import judge_local
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.runner import EMPTY, ToolRun

__all__ = ["DEFAULT_PCRS", "collect_quote", "parse_quote", "judge_quote", "extract_tpm_quote"]

DEFAULT_PCRS = "sha256:0,1,2,7"
_TOOL = "tpm2_quote"
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_PCR = re.compile(r"^\s+(\d+)\s*:\s*0x([0-9A-Fa-f]+)\s*$")
_BANK = re.compile(r"^\s+(sha1|sha256|sha384|sha512|sm3_256):\s*$")


def _settings(ctx):
    settings = dict(ctx.opt("tpm_quote") or {})
    nonce = settings.get("nonce") or binascii.hexlify(os.urandom(16)).decode("ascii")
    return settings.get("pcrs") or DEFAULT_PCRS, nonce.lower(), settings.get("tcti")


def _steps(folder, pcrs, nonce):
    def path(name):
        return os.path.join(folder, name)
    flush = ("tpm2_flushcontext", ["-t"])
    return [("tpm2_createek", ["-c", path("ek.ctx"), "-G", "rsa", "-u", path("ek.pub")]), flush,
            ("tpm2_createak", ["-C", path("ek.ctx"), "-c", path("ak.ctx"), "-G", "rsa", "-g", "sha256", "-s",
                               "rsassa", "-u", path("ak.pem"), "-f", "pem", "-n", path("ak.name")]), flush,
            ("tpm2_flushcontext", ["-s"]),
            ("tpm2_quote", ["-c", path("ak.ctx"), "-l", pcrs, "-q", nonce, "-m", path("quote.msg"), "-s",
                            path("quote.sig"), "-o", path("quote.pcrs"), "-g", "sha256"]), flush]


def _run_steps(probe, ctx, folder, pcrs, nonce, tcti):
    tcti_args = ["-T", tcti] if tcti else []
    outputs = []
    for tool, args in _steps(folder, pcrs, nonce):
        run = ctx.runner.run(probe.name, tool, args + tcti_args, ctx.timeout(probe.name))
        if (run.error and run.error != EMPTY) or run.rc != 0:  # flushcontext prints nothing on success
            reason = run.reason or "%s: %s exited %s: %s" % (probe.name, tool, run.rc, (run.stderr or "").strip()[-300:])
            return None, ToolRun(probe.name, run.argv, run.rc, run.stdout, run.stderr, run.duration,
                                 run.error or "failed", reason)
        if tool == "tpm2_quote":
            outputs.append(run.stdout)
    check = ctx.runner.run(probe.name, "tpm2_checkquote", [  # offline: takes no TCTI
        "-u", os.path.join(folder, "ak.pem"), "-m", os.path.join(folder, "quote.msg"), "-s",
        os.path.join(folder, "quote.sig"), "-f", os.path.join(folder, "quote.pcrs"), "-g", "sha256", "-q", nonce],
        ctx.timeout(probe.name))
    with open(os.path.join(folder, "ak.pem")) as handle:
        pem = handle.read()
    text = "### tpm2_quote\n%s\n### tpm2_checkquote rc=%s\n%s%s\n### nonce %s\n### ak.pem\n%s" % (
        outputs[0].rstrip("\n"), check.rc, check.stdout.rstrip("\n"), check.stderr.rstrip("\n"), nonce, pem)
    return text, None


def collect_quote(probe, ctx):
    """Create EK and AK, quote the PCRs with the nonce, verify it; one raw text (``raw/tpm_quote.txt``)."""
    pcrs, nonce, tcti = _settings(ctx)
    folder = tempfile.mkdtemp(prefix="gpufleet-tpm-")
    try:
        text, failure = _run_steps(probe, ctx, folder, pcrs, nonce, tcti)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if failure is not None:
        return [failure]
    return [ToolRun(probe.name, ["tpm2_quote", "-l", pcrs], 0, text, "", 0.0, None, "")]


def _sections(text):
    sections, current = {}, None
    for _number, line in numbered_lines(text or ""):
        if line.startswith("### "):
            current = line[4:].strip()
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    return sections


def parse_quote(text):
    """Raw ``tpm_quote`` text -> {"pcrs": {"sha256:0": hex}, "verified": bool, "nonce": hex}."""
    sections = _sections(text)
    quote = sections.get("tpm2_quote")
    verify = [k for k in sections if k.startswith("tpm2_checkquote rc=")]
    nonce = [k[6:] for k in sections if k.startswith("nonce ")]
    if quote is None or not verify or not nonce:
        raise ParseError(_TOOL, "the tpm2_quote, tpm2_checkquote and nonce sections")
    pcrs, bank = {}, None
    for line in quote:
        if _BANK.match(line):
            bank = _BANK.match(line).group(1)
        elif _PCR.match(line) and bank:
            index, value = _PCR.match(line).groups()
            pcrs["%s:%s" % (bank, index)] = value.lower()
    if not pcrs:
        raise ParseError(_TOOL, "PCR values under pcrs:", why="the quote lists none")
    return {"pcrs": pcrs, "verified": verify[0].endswith("rc=0"), "nonce": nonce[0]}


def _expected(settings):
    expected = {}
    for key, value in (settings.get("expected_pcrs") or {}).items():
        key = str(key) if ":" in str(key) else "sha256:%s" % key
        value = str(value).lower()
        value = value[2:] if value.startswith("0x") else value
        expected[key] = value
    return expected


def judge_quote(found, settings):
    """Pass only when the quote verifies, carries the requested nonce and every expected PCR matches."""
    expected = _expected(settings)
    nonce = (settings.get("nonce") or "").lower()
    problems = []
    if not found["verified"]:
        problems.append("tpm2_checkquote rejected the quote (bad signature or nonce)")
    if nonce and found["nonce"] != nonce:
        problems.append("the quote carries nonce %s, not the controller's %s" % (found["nonce"], nonce))
    if not expected:
        problems.append("no expected_pcrs were given, so the PCR values prove nothing")
    for key, value in sorted(expected.items()):
        if found["pcrs"].get(key) != value:
            problems.append("PCR %s is %s, expected %s" % (key, found["pcrs"].get(key, "not quoted"), value))
    shown = tuple(sorted((k, v) for k, v in found["pcrs"].items()))
    if problems:
        return judge_local("tpm_quote", shown, tuple(sorted(expected.items())), False,
                           "tpm_quote: " + "; ".join(problems))
    return judge_local("tpm_quote", shown, tuple(sorted(expected.items())), True,
                       "tpm_quote: signature and nonce verified, %d PCR(s) match" % len(expected))


def extract_tpm_quote(texts, ctx):
    return {"tpm_quote": judge_quote(parse_quote(texts.get("", "")), dict(ctx.opt("tpm_quote") or {}))}
