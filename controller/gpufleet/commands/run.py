"""``gpufleet run``: run a lifecycle playbook on ansible-runner with live per-node progress,
then write the HTML + Markdown report.

    gpufleet run gang --lab -e gpufleet_gang_id=demo -e gpufleet_gang_size=8 -e gpufleet_gang_sku=lab
"""
import datetime
import os
import sys
import time

NAME = "run"
HELP = "run a lifecycle playbook with live per-node progress and write the report"
# The command exits with ansible-playbook's own code (ansible.errors.ExitCode; failed and
# unreachable hosts are bit flags), or ansible-runner's 254 for a run it stopped.
EXIT_CODES = ((0, "the playbook ran and no host failed"),
              (1, "error (a bad variable file or extra variable, an unknown playbook; ansible-playbook failed)"),
              (2, "usage error, or the playbook ran and one or more hosts failed"),
              (4, "one or more hosts were unreachable, or the playbook could not be parsed"),
              (5, "bad or incomplete options to ansible-playbook"),
              (6, "hosts failed and others were unreachable"),
              (99, "the playbook run was interrupted"),
              (250, "unexpected error in ansible-playbook"),
              (254, "ansible-runner stopped the run (timeout or cancelled)"))


class Progress:
    """Per-node view of a run, fed with ansible-runner events; prints one line per change."""

    def __init__(self, out=sys.stdout, clock=time.monotonic):
        self.out = out
        self.clock = clock
        self.started = clock()
        self.nodes = {}

    def _line(self, host, state, text):
        self.out.write("%7.1fs  %-14s %-14s %s\n" % (self.clock() - self.started, host, state, text))
        self.out.flush()

    def __call__(self, event):
        data = event.get("event_data") or {}
        host, kind = data.get("host"), event.get("event")
        if kind == "runner_on_ok" and data.get("task_action", "").endswith(".gang"):
            self._gang((data.get("res") or {}).get("gang") or {}, data.get("task", ""))
            return True
        if not host or host == "localhost" or kind not in (
                "runner_on_ok", "runner_on_failed", "runner_on_unreachable"):
            return True
        node = self.nodes.setdefault(host, {"state": "-", "failed": False, "task": ""})
        res = data.get("res") or {}
        node["task"] = data.get("task", "")
        if kind == "runner_on_ok" and data.get("task_action", "").endswith("node_state") and res.get("state"):
            if res["state"] != node["state"]:
                node["state"] = res["state"]
                self._line(host, node["state"], "(%s)" % node["task"])
        elif kind == "runner_on_unreachable":
            # may be expected (ignore_unreachable); the ledger says whether the node failed
            self._line(host, "unreachable", "(%s)" % node["task"])
        elif kind == "runner_on_failed" and not data.get("ignore_errors"):
            node["failed"] = True
            reason = res.get("msg") or res.get("reason") or kind
            self._line(host, "FAILED", "%s: %s" % (node["task"], str(reason).splitlines()[0][:160]))
        return True

    def _gang(self, gang, task):
        """A gang step changes its members' states on the controller: show them per node."""
        for member in gang.get("members") or []:
            node = self.nodes.setdefault(member["node"], {"state": "-", "failed": False, "task": ""})
            if member.get("state") and member["state"] != node["state"]:
                node["state"] = member["state"]
                self._line(member["node"], node["state"], "(gang %s %s: %s)" % (gang.get("gang_id"),
                                                                                gang.get("status"), task))

    def summary(self):
        lines = ["%-14s %-14s %s" % ("node", "state", "result")]
        for host, node in sorted(self.nodes.items()):
            lines.append("%-14s %-14s %s" % (host, node["state"], "FAILED" if node["failed"] else "ok"))
        return "\n".join(lines)


def _extra_vars(pairs):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError
    out, files = {}, []
    for pair in pairs or []:
        if pair.startswith("@"):
            files.append(os.path.abspath(pair[1:]))
            continue
        key, sep, value = pair.partition("=")
        if not sep:
            raise GpufleetError("Extra variable %r is not key=value or @file." % pair)
        out[key] = _value(pair, value) if value else value
    return out, files


def _value(pair, text):
    """An extra variable's value, read as YAML by the project's strict reader (a key twice in
    a mapping value is an error, as in every YAML file)."""
    from ansible_collections.gpufleet.baremetal.plugins.module_utils import strict_yaml
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.strict_yaml import StrictYamlError
    try:
        return strict_yaml.loads(text, "extra variable %r" % pair)
    except StrictYamlError as exc:
        raise GpufleetError("%s. Quote the value if it is text." % exc.msg) from None


def _playbook(name):
    from gpufleet import playbook_runner
    return playbook_runner.playbook_path(name)


def _merged_vars(files, extra):
    """The @files (strictly read: lab_target.merged_vars) with the key=value pairs on top."""
    from gpufleet import lab_target
    merged = lab_target.merged_vars(files)
    merged.update(extra)
    return merged


def run(args, out=sys.stdout):
    from gpufleet import lab_target, playbook_runner

    playbook = _playbook(args.playbook)
    extra, files = _extra_vars(args.extra_vars)
    if args.lab:
        files.insert(0, lab_target.vars_path())
    run_id = args.run_id or "run-" + datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    extra["gpufleet_run_id"] = run_id
    inventory = os.path.abspath(args.inventory or lab_target.inventory_path())
    variables = _merged_vars(files, extra)     # a bad variable file stops the run before it starts
    progress = Progress(out)
    out.write("run %s: %s on %s\n" % (run_id, os.path.basename(playbook), os.path.basename(inventory)))
    status, rc, artifacts = playbook_runner.run_playbook(playbook, inventory, run_id, extravars=extra, var_files=files,
                                                         limit=args.limit, event_handler=progress)
    out.write(progress.summary() + "\n")
    out.write("playbook %s (rc=%s); ansible output: %s\n" % (status, rc, artifacts))
    return rc, run_id, variables


def cmd_run(args):
    from gpufleet.commands import report

    rc, run_id, variables = run(args)
    ledger = variables.get("gpufleet_ledger")
    report_dir = variables.get("gpufleet_report_dir")
    # A PostgreSQL ledger (a URL) has no folder beside it: the report needs gpufleet_report_dir.
    if ledger and (os.path.isfile(ledger) or ("://" in ledger and report_dir)):
        gate_dir = os.path.join(report_dir or os.path.join(os.path.dirname(ledger), "reports"), "gate")
        out_dir = args.report_dir or os.path.join(os.path.dirname(gate_dir), run_id)
        paths = report.build(ledger, out_dir, gate_dir, run_id=run_id, gang_id=variables.get("gpufleet_gang_id"))
        print("report: %s\nmarkdown: %s" % (paths["html"], paths["markdown"]))
    return rc


def register(parser):
    parser.add_argument("playbook", help="enroll, bringup, gang, recycle, decommission, or a playbook path")
    parser.add_argument("-i", "--inventory", help="rack inventory (default inventories/lab.rack.yml)")
    parser.add_argument("-e", "--extra-vars", action="append", help="key=value or @file (repeatable)")
    parser.add_argument("-l", "--limit", help="limit to these hosts")
    parser.add_argument("--lab", action="store_true", help="target the running lab (adds -e @build/lab/vars.yml)")
    parser.add_argument("--run-id", help="id recorded with every transition (default run-<UTC time>)")
    parser.add_argument("--report-dir", help="where to write the report (default <report dir>/<run id>)")
    parser.set_defaults(func=cmd_run)
