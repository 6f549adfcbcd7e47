"""The capacity controller on the lab, step by step (``make demo``; tests/integration/controller).

    python -m lab.controller_demo            # on a lab that is up, published and has no controller

Every node starts cold; the controller (``gpufleet controller run``) fills the hot floor; an
``sbatch -N2`` job starts on hot nodes; an ``sbatch -N4`` job makes it bring up more nodes,
one member carrying a gate fault is replaced by a spare, and the four ranks print their start
times; idle nodes are parked (powered off through Redfish, containers gone). The report shows
per job the time from submit to start, split by the tier its nodes came from and the steps.
"""
import datetime
import json
import os
import signal
import subprocess
import sys
import time

import gpufleet  # noqa: F401  (installs the collection loader)
from gpufleet.collection import repo_path
from gpufleet.controller import records

SLURMCTLD = "gpufleet-lab-slurmctld"
POLICY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config", "capacity.yml")
GPUFLEET = os.path.join(os.path.dirname(sys.executable), "gpufleet")
TIER_OF_STATE = {"hot": "hot", "ready": "hot", "parked": "warm", "joined": "idle"}


class DemoError(RuntimeError):
    pass


def sh(argv, timeout=120, check=True):
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode:
        raise DemoError("%s failed (exit %d): %s" % (" ".join(argv), proc.returncode, proc.stderr.strip()[-500:]))
    return proc.stdout


def slurm(*args, timeout=60):
    return sh(["docker", "exec", SLURMCTLD] + list(args), timeout=timeout)


def wait_for(what, check, timeout, poll=2.0, say=print):
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        value = check()
        if value:
            return value
        time.sleep(poll)
    raise DemoError("timed out after %.0f s waiting for %s" % (timeout, what))


def ledger():
    return records.open_ledger(repo_path("build", "lab", "ledger.sqlite"))


def states():
    led = ledger()
    try:
        return {n["node"]: n["state"] for n in led.nodes()}
    finally:
        led.close()


def count(state):
    return sum(1 for s in states().values() if s == state)


class Controller:
    """``gpufleet controller run --lab`` as a child process (log in build/lab/controller.log)."""

    def __init__(self, interval=3, policy=POLICY, log=None, metrics_port=None):
        self.args = [GPUFLEET, "controller", "run", "--lab", "--policy", policy, "--interval", str(interval),
                     "--lease-ttl", "20", "--wait"]
        if metrics_port:
            self.args += ["--metrics-port", str(metrics_port), "--metrics-addr", "127.0.0.1"]
        self.log_path = log or repo_path("build", "lab", "controller.log")
        self.proc = None

    # `gpufleet lab down` kills the controller named here (lab.twin.lab.kill_controller)
    PIDFILE = repo_path("build", "lab", "controller.pid")

    def start(self):
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        with open(self.PIDFILE, "w") as handle:
            handle.write("%d\n" % self.proc.pid)
        return self

    def check_alive(self):
        """Raise with the log's tail when the controller exited (a wait should not outlast it)."""
        if self.proc is not None and self.proc.poll() is not None:
            with open(self.log_path, errors="replace") as handle:
                tail = handle.read()[-2000:]
            raise DemoError("the controller exited (%s):\n%s" % (self.proc.returncode, tail))
        return True

    def stop(self, sig=signal.SIGTERM, timeout=900):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout)
        return self.proc.returncode if self.proc else None


def sbatch(nodes, name, sleep=3):
    """Submit a job whose ranks print host and start time, then sleep; returns its id."""
    out = slurm("sbatch", "-N%d" % nodes, "-J", name, "--chdir=/tmp", "--output=/tmp/gpufleet-%j.out",
                "--wrap", "srun bash -c 'echo rank $SLURMD_NODENAME $(date +%%s.%%N)'; sleep %d" % sleep)
    return out.split()[-1]


def fault_on_a_cold_member(job_id, submit, timeout=900):
    """Inject a gate fault on the first gang member the controller brings up for ``job_id``
    (its gate runs minutes later); None when the job starts without a bring-up."""
    def first_bringup():
        if job(job_id)["start"]:
            return "started"
        led = ledger()
        try:
            rows = records.decisions(led, since=submit - 1)
        finally:
            led.close()
        found = sorted((d["id"], d["nodes"][0]) for d in rows if d["action"] == "bringup" and d["job"] == job_id)
        return found[0][1] if found else None
    member = wait_for("a bring-up for job %s" % job_id, first_bringup, timeout, poll=0.5)
    if member == "started":
        return None
    sh([GPUFLEET, "lab", "fault", member, "faulty_gpu"])
    return member


def _epoch(text):
    if not text or text in ("Unknown", "None", "N/A"):
        return None
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def job(job_id):
    """scontrol's view of a job: state, submit/start (epoch), nodes, batch host. A job Slurm
    already forgot (MinJobAge after it ended) reads as state GONE."""
    try:
        text = slurm("scontrol", "show", "job", "-o", job_id)
    except DemoError as exc:
        if "Invalid job id" not in str(exc):
            raise
        return {"state": "GONE", "submit": None, "start": None, "nodes": [], "batch_host": None}
    fields = dict(item.split("=", 1) for item in text.split() if "=" in item)
    return {"state": fields.get("JobState"), "submit": _epoch(fields.get("SubmitTime")),
            "start": _epoch(fields.get("StartTime")) if fields.get("JobState") != "PENDING" else None,
            "nodes": sh(["docker", "exec", SLURMCTLD, "scontrol", "show", "hostnames",
                         fields.get("NodeList", "")]).split() if fields.get("NodeList") not in (None, "(null)") else [],
            "batch_host": fields.get("BatchHost")}


def rank_starts(job_id, batch_host):
    """Ranks' own start times (epoch seconds) from the job's output on its batch host."""
    text = sh(["docker", "exec", "gpufleet-lab-%s" % batch_host, "cat", "/tmp/gpufleet-%s.out" % job_id])
    return {line.split()[1]: float(line.split()[2]) for line in text.splitlines() if line.startswith("rank ")}


def _state_at(history, at):
    state = None
    for step in history:
        if _iso(step["at"]) <= at:
            state = step["to_state"]
    return state


def _iso(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def timeline(job_id, info):
    """Submit -> start of one job split by node tier and step, and the controller's share."""
    led = ledger()
    try:
        decisions = [d for d in records.decisions(led, since=info["submit"] - 1) if d["at"] >= info["submit"] - 1]
        out = {"job": job_id, "submit_to_start_s": round(info["start"] - info["submit"], 1), "nodes": {}}
        for node in info["nodes"]:
            history = led.history(node)
            steps, last = [], info["submit"]
            for step in history:
                at = _iso(step["at"])
                if info["submit"] < at <= info["start"] + 1:
                    steps.append("%s +%.0fs" % (step["to_state"], at - last))
                    last = at
            out["nodes"][node] = {"tier_at_submit": TIER_OF_STATE.get(_state_at(history, info["submit"]), "cold"),
                                  "steps": steps}
        mine = [d for d in decisions if d["job"] == job_id or set(d["nodes"] or ()) & set(info["nodes"])]
        first = min((d["at"] for d in mine), default=None)
        admit = [d for d in mine if d["action"] in ("admit", "resume")]
        out["first_decision_after_submit_s"] = round(first - info["submit"], 1) if first else None
        out["admit_to_start_s"] = round(info["start"] - admit[-1]["at"], 1) if admit else None
        out["decisions"] = ["%s %s %s: %s" % (d["id"], d["action"], ",".join(d["nodes"] or ()), d["outcome"])
                            for d in mine]
        return out
    finally:
        led.close()


def run_demo(say=print, idle_timeout=900):
    """The whole story on a lab that is up and published; returns the per-job report."""
    report = {}
    controller = Controller().start()
    try:
        t0 = time.time()
        say("controller started (pid %d); every node cold: %s" % (controller.proc.pid, states() or "nothing enrolled"))
        wait_for("the hot floor (2 hot nodes)", lambda: count("hot") >= 2, 1500)
        say("hot floor filled after %.0f s: %s" % (time.time() - t0, states()))
        # -N2 runs on while -N4 waits, so the gang needs nodes beyond the hot floor
        two = sbatch(2, "two", sleep=3600)
        wait_for("job %s to start" % two, lambda: job(two)["start"], 300, poll=0.5)
        info = job(two)
        report[two] = timeline(two, info)
        say("job %s (-N2) started %.1f s after submit on %s" % (two, info["start"] - info["submit"], info["nodes"]))
        four = sbatch(4, "four")
        faulty = fault_on_a_cold_member(four, job(four)["submit"])
        say("gate fault injected on %s (faulty_gpu), a member the controller brings up" % faulty if faulty else
            "job %s started without a bring-up: no member to inject a gate fault into" % four)
        wait_for("job %s to start" % four, lambda: job(four)["start"], 2400, poll=1)
        slurm("scancel", two)
        info = job(four)
        ranks = wait_for("the ranks' output", lambda: _try(rank_starts, four, info["batch_host"]), 120)
        report[four] = timeline(four, info)
        report[four]["rank_starts"] = ranks
        report[four]["rank_spread_s"] = round(max(ranks.values()) - min(ranks.values()), 3)
        report[four]["faulty"] = faulty
        report[four]["substitutions"] = [d for d in report[four]["decisions"] if " substitute " in d]
        say("job %s (-N4) started %.1f s after submit on %s; ranks within %.3f s" % (
            four, info["start"] - info["submit"], info["nodes"], report[four]["rank_spread_s"]))
        wait_for("idle nodes parked", lambda: count("parked") >= 1, idle_timeout, poll=5)
        wait_for("parked nodes' containers gone", lambda: not (_containers() & _parked()), 300)
        say("parked: %s; running containers: %s" % (sorted(_parked()), sorted(_containers())))
        return report
    finally:
        controller.stop()


def _try(fn, *args):
    try:
        return fn(*args)
    except DemoError:
        return None


def _inventory():
    return ["lab-r%dn%d" % (r, n) for r in (1, 2) for n in (1, 2, 3, 4)]


def _parked():
    return {n for n, s in states().items() if s == "parked"}


def _containers():
    names = sh(["docker", "ps", "--format", "{{.Names}}"]).split()
    return {n[len("gpufleet-lab-"):] for n in names if n.startswith("gpufleet-lab-lab-")}


def main():
    report = run_demo(say=lambda text: print(text, file=sys.stderr, flush=True))
    print(json.dumps(report, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
