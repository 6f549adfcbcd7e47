# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""One acceptance-gate run on a node: the argument spec, the run, the report and the result.

``acceptance_gate`` (the module) and tests call ``execute(params, check_mode)``; it
loads the profile, runs the phases, writes the report folder and returns the module
result. A fail verdict is part of the result (``verdict: fail``), not an exception; the
module decides to fail the task with it.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import binascii
import json
import os
import socket
import time

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate import report as gate_report
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.attestation import (
    IMAGE_RELEASE_PATH, parse_image_release)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.catalog import PHASES
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import GateError, ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.phases import (
    GateContext, local_checks, plan, run_gate)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.probes import describe
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.profile import load_profile, profile_from_dict
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.runner import Runner

__all__ = ["argument_spec", "execute", "load_gate_profile", "new_report_id", "DEFAULT_REPORT_DIR"]

DEFAULT_REPORT_DIR = "/var/lib/gpufleet/gate"


def argument_spec():
    """The module's argument spec (DOCUMENTATION in acceptance_gate.py mirrors it)."""
    return dict(
        profile=dict(type="raw", required=True),
        phases=dict(type="list", elements="str", choices=list(PHASES)),
        run_all=dict(type="bool", default=False),
        expected_release=dict(type="dict"),
        image_release_path=dict(type="path", default=IMAGE_RELEASE_PATH),
        firmware_inventory=dict(type="list", elements="dict"),
        tpm_quote=dict(type="dict", options=dict(
            pcrs=dict(type="str", default="sha256:0,1,2,7"),
            nonce=dict(type="str"),
            expected_pcrs=dict(type="dict", required=True),
            tcti=dict(type="str"),
        )),
        peers=dict(type="list", elements="str", default=[]),
        skip_checks=dict(type="list", elements="str", default=[]),
        hcas=dict(type="list", elements="str", default=[]),
        fabric_launcher=dict(type="list", elements="str", default=["mpirun", "--allow-run-as-root"]),
        tool_paths=dict(type="dict", default={}),
        path_dirs=dict(type="list", elements="path", default=[]),
        report_dir=dict(type="path", default=DEFAULT_REPORT_DIR),
        storage_dir=dict(type="path", default="/var/tmp/gpufleet-gate"),
        timeouts=dict(type="dict", default={}),
        default_timeout=dict(type="int", default=600),
        node=dict(type="str"),
        fail_on_verdict=dict(type="bool", default=True),
    )


def load_gate_profile(profile):
    """A validated Profile from a mapping (what the controller loads) or a YAML path on the node."""
    if isinstance(profile, dict):
        return profile_from_dict(profile, str(profile.get("profile", "inline")))
    if isinstance(profile, str) and profile:
        return load_profile(profile)
    raise GateError("profile must be a mapping (profiles/gate/<sku>.yml loaded on the controller) or the path of a "
                    "profile file on the node, not %s." % type(profile).__name__)


def new_report_id(node, now=None, token=None):
    """``<node>-<UTC yyyymmddThhmmssZ>-<6 hex>``: sortable by time, unique per run."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    token = token or binascii.hexlify(os.urandom(3)).decode("ascii")
    return "%s-%s-%s" % (node, stamp, token)


def _image_version(path):
    try:
        with open(path) as handle:
            return parse_image_release(handle.read()).get("VERSION")
    except (IOError, OSError, ParseError):
        return None


def _options(params, node):
    keys = ("expected_release", "image_release_path", "firmware_inventory", "tpm_quote", "peers", "skip_checks", "hcas",
            "fabric_launcher", "storage_dir", "timeouts", "default_timeout")
    options = dict((k, params.get(k)) for k in keys)
    options["node"] = node
    return options


def _previous(report_dir):
    try:
        with open(os.path.join(report_dir, "latest.json")) as handle:
            data = json.load(handle)
        return {"report_id": data.get("report_id"), "verdict": data.get("verdict")}
    except (IOError, OSError, ValueError):
        return {"report_id": None, "verdict": None}


def _plan_only(profile, params, options):
    ctx = GateContext(profile, options=options)
    return [{"phase": phase, "probes": [dict(describe(p, ctx), checks=list(c)) for p, c in probes]}
            for phase, probes in plan(profile, params.get("phases"), tuple(params.get("skip_checks") or ()),
                                      local_checks(options))]


def _sink(folder):
    def save(key, stdout, stderr):
        return gate_report.write_raw(folder, key, stdout, stderr)
    return save


def execute(params, check_mode=False, runner=None, clock=None):
    """Run the gate as the module would; returns the module result mapping."""
    profile = load_gate_profile(params["profile"])
    node = params.get("node") or socket.gethostname()
    options = _options(params, node)
    before = _previous(params["report_dir"])
    if check_mode:
        return {"changed": True, "verdict": None, "plan": _plan_only(profile, params, options),
                "profile": profile.name, "node": node, "diff": {"before": before, "after": {"report_id": "(new)"}}}
    report_id = new_report_id(node)
    folder = os.path.join(params["report_dir"], report_id)
    os.makedirs(os.path.join(folder, "raw"), 0o755)
    gate_report.write_inputs(folder, dict(options, report_id=report_id, profile=params["profile"]))
    runner = runner or Runner(tool_paths=params.get("tool_paths"), path_dirs=params.get("path_dirs") or ())
    ctx = GateContext(profile, runner=runner, options=options, raw_sink=_sink(folder), clock=clock)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    outcome = run_gate(ctx, params.get("phases"), params.get("run_all", False))
    meta = {"report_id": report_id, "node": node, "image_version": _image_version(options["image_release_path"]),
            "profile": profile.name, "sku": profile.sku, "run_all": params.get("run_all"), "started": started,
            "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    document = gate_report.build_report(outcome, meta)
    gate_report.write_report(params["report_dir"], document)
    return {"changed": True, "verdict": document["verdict"], "report_id": report_id, "report_path": folder,
            "failed_phase": document["failed_phase"], "failed_check": document["failed_check"],
            "reason": document["reason"], "summary": gate_report.text_table(document), "report": document,
            "diff": {"before": before, "after": {"report_id": report_id, "verdict": document["verdict"]}}}
