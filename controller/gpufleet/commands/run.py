"""``gpufleet run``: run a lifecycle playbook on ansible-runner with live per-node progress,
then write the HTML + Markdown report.

    gpufleet run gang --lab -e gpufleet_gang_id=demo -e gpufleet_gang_size=8 -e gpufleet_gang_sku=lab
"""
import datetime
import os
import sys
import time

import yaml

from gpufleet.collection import collections_path, repo_path

NAME = "run"
HELP = "run a lifecycle playbook with live per-node progress and write the report"
# The lab writes its variables here (`gpufleet lab up`); --lab adds them to a run.
LAB_VARS = ("build", "lab", "vars.yml")
LAB_INVENTORY = ("inventories", "lab.rack.yml")


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
    out, files = {}, []
    for pair in pairs or []:
        if pair.startswith("@"):
            files.append(os.path.abspath(pair[1:]))
            continue
        key, sep, value = pair.partition("=")
        if not sep:
            from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError
            raise GpufleetError("Extra variable %r is not key=value or @file." % pair)
        out[key] = yaml.safe_load(value) if value else value
    return out, files


def _playbook(name):
    path = name if os.path.isfile(name) else repo_path("playbooks", name + ("" if name.endswith(".yml") else ".yml"))
    if not os.path.isfile(path):
        from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError
        raise GpufleetError("Playbook %s not found. Use a path or one of: enroll, bringup, gang, recycle, decommission."
                            % name)
    return os.path.abspath(path)


def _merged_vars(files, extra):
    merged = {}
    for path in files:
        with open(path) as handle:
            merged.update(yaml.safe_load(handle) or {})
    merged.update(extra)
    return merged


def _runner_env():
    """ansible-playbook sees the same collections (and the checkout's ansible.cfg, if any)."""
    env = {"ANSIBLE_COLLECTIONS_PATH": collections_path()}
    config = repo_path("ansible.cfg")
    if os.path.isfile(config):
        env["ANSIBLE_CONFIG"] = config
    return env


def run(args, out=sys.stdout):
    import ansible_runner

    playbook = _playbook(args.playbook)
    extra, files = _extra_vars(args.extra_vars)
    if args.lab:
        files.insert(0, repo_path(*LAB_VARS))
    run_id = args.run_id or "run-" + datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    extra["gpufleet_run_id"] = run_id
    inventory = os.path.abspath(args.inventory or repo_path(*LAB_INVENTORY))
    private = repo_path("build", "runs", run_id)
    os.makedirs(private, exist_ok=True)
    cmdline = " ".join("-e @%s" % f for f in files)
    progress = Progress(out)
    # ansible-runner starts ansible-playbook from PATH: the one installed beside this Python.
    bindir = os.path.dirname(sys.executable)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    out.write("run %s: %s on %s\n" % (run_id, os.path.basename(playbook), os.path.basename(inventory)))
    result = ansible_runner.run(
        private_data_dir=private, playbook=playbook, inventory=inventory, extravars=extra,
        cmdline=cmdline or None, limit=args.limit, quiet=True, event_handler=progress,
        envvars=_runner_env())
    out.write(progress.summary() + "\n")
    out.write("playbook %s (rc=%s); ansible output: %s\n" % (result.status, result.rc, os.path.join(private, "artifacts")))
    return result.rc, run_id, _merged_vars(files, extra)


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
