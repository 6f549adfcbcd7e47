"""``gpufleet gate evaluate``: re-judge a node's saved gate outputs against any profile.

No tool runs. The folder is a report folder the ``acceptance_gate`` module wrote
(``<report_dir>/<report_id>``, with ``raw/`` and ``inputs.json``) or a folder of raw
files with the same names (``<probe>.txt``). Every saved output is judged (as with
``run_all``); a check whose output is missing fails closed. Prints the table, writes the
JSON report, exits 0 on pass and 1 on fail.
"""
import datetime
import json
import os

from gpufleet.collection import repo_path

NAME = "gate"
HELP = "acceptance-gate tools (offline re-judging of saved outputs)"


def register(parser):
    sub = parser.add_subparsers(dest="gate_command", metavar="GATE_COMMAND")
    evaluate = sub.add_parser("evaluate", help="re-judge saved raw outputs against a profile",
                              description=__doc__.split("\n\n")[1])
    evaluate.add_argument("--profile", required=True,
                          help="profile name (profiles/gate/<name>.yml) or path of a profile file")
    evaluate.add_argument("--results", required=True, help="report folder (with raw/) or folder of raw files")
    evaluate.add_argument("--output", help="where to write the JSON (default: <results>/evaluation-<profile>.json)")
    evaluate.add_argument("--phases", help="comma-separated phases to judge (default: all)")
    evaluate.add_argument("--expect", action="append", default=[], metavar="KEY=VALUE",
                          help="expected image release value (overrides inputs.json); repeatable")
    evaluate.set_defaults(func=run_evaluate)
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])


def _profile_path(value):
    if os.path.sep in value or value.endswith((".yml", ".yaml")):
        return value
    return repo_path("profiles", "gate", value + ".yml")


def _expected(pairs):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import GateError
    expected = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise GateError("--expect %s is not KEY=VALUE (for example --expect VERSION=2026.06.2)." % pair)
        expected[key] = value
    return expected or None


def run_evaluate(args):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate import report
    from gpufleet.gate.replay import evaluate
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.profile import load_profile

    profile = load_profile(_profile_path(args.profile))
    phases = [p.strip() for p in args.phases.split(",") if p.strip()] if args.phases else None
    outcome, options = evaluate(profile, args.results, _expected(args.expect), phases)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    meta = {"report_id": "evaluate-%s" % profile.name, "node": options.get("node") or "unknown",
            "profile": profile.name, "sku": profile.sku, "run_all": True, "started": now, "finished": now}
    document = report.build_report(outcome, meta)
    document["source"] = os.path.abspath(args.results)
    output = args.output or os.path.join(args.results, "evaluation-%s.json" % profile.name)
    with open(output, "w") as handle:
        json.dump(document, handle, indent=2, sort_keys=True)
        handle.write("\n")
    print(report.text_table(document), end="")
    print("written: %s" % output)
    return 0 if document["verdict"] == "pass" else 1
