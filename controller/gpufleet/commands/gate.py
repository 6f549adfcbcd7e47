"""``gpufleet gate evaluate``: re-judge a node's saved gate outputs against any profile.

No tool runs. The folder is a report folder the ``acceptance_gate`` module wrote
(``<report_dir>/<report_id>``, with ``raw/`` and ``inputs.json``) or a folder of raw
files with the same names (``<probe>.txt``). Every saved output is judged (as with
``run_all``); a check whose output is missing fails closed. Prints the table, writes the
JSON report, exits 0 on pass and 1 on fail.

Bad input (a raw file that is not a regular file or is over 64 MiB, an inputs.json of the
wrong shape, an output folder that does not exist) is one error line and exit 1, before
any report is written; the report is written to a temporary file and renamed.
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
    from gpufleet.gate.replay import evaluate, raw_folder
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.profile import load_profile

    profile = load_profile(_profile_path(args.profile))
    phases = [p.strip() for p in args.phases.split(",") if p.strip()] if args.phases else None
    raw_folder(args.results)  # a missing results folder is named before the output's folder
    output = args.output or os.path.join(args.results, "evaluation-%s.json" % profile.name)
    _check_output(output)
    outcome, options = evaluate(profile, args.results, _expected(args.expect), phases)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    meta = {"report_id": "evaluate-%s" % profile.name, "node": options.get("node") or "unknown",
            "profile": profile.name, "sku": profile.sku, "run_all": True, "started": now, "finished": now}
    document = report.build_report(outcome, meta)
    document["source"] = os.path.abspath(args.results)
    _write_atomically(output, json.dumps(document, indent=2, sort_keys=True) + "\n")
    print(report.text_table(document), end="")
    print("written: %s" % output)
    return 0 if document["verdict"] == "pass" else 1


def _check_output(output):
    """Refuse, before judging anything, an output path that cannot be written."""
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import GateError
    folder = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(folder):
        raise GateError("Output folder %s does not exist. Create it, or pass --output with a file in an existing "
                        "folder." % folder, output=output)
    if os.path.isdir(output):
        raise GateError("Output %s is a folder. Pass --output with a file name, e.g. %s." % (
            output, os.path.join(output, "evaluation.json")), output=output)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise GateError("Output folder %s is not writable. Pass --output with a file in a folder you can write "
                        "to." % folder, output=output)


def _write_atomically(path, text):
    """Write ``text`` to a temporary file beside ``path`` and rename it: never a partial report."""
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import GateError
    tmp = "%s.%d.tmp" % (path, os.getpid())
    created = False
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        created = True
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        if created and os.path.lexists(tmp):
            os.remove(tmp)
        raise GateError("Cannot write %s (%s). Free space or pass --output elsewhere." % (
            path, exc.strerror or exc), output=path)
