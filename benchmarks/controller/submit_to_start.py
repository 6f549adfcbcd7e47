"""Submit -> start in the lab for jobs served from cold, hot and warm nodes, and the controller's share.

    flock /tmp/gpufleet-lab.lock .venv/bin/python benchmarks/controller/submit_to_start.py [--jobs 5]

Needs a lab that is up and published (`gpufleet lab up && gpufleet lab publish --version lab`),
every node cold and no controller running. Three phases on the same lab, each with its own
capacity policy (the lab's, with the floors changed) and its own `gpufleet controller run`:

1. cold: floors 0/0; one `-N1` job at a time, each waits for a full bring-up of a cold node;
2. hot: the jobs are cancelled, floors hot=N: the idle nodes are held hot; one job at a time;
3. warm: the jobs are cancelled, floors warm=N: the idle nodes are parked (powered off through
   Redfish); one job at a time, each waits for a wake;
4. gang-substitute and gang-rollback: an `-N4` job (the demo's, ranks print their start) on
   parked nodes (warm floor 5: the gang and one spare, so both ways start from the same
   supply), with gate_validity 150 s so every woken member is re-gated (long enough for a
   wake to re-gate and register within it: a hot node with a stale gate is warm again; and
   day-2's budget
   0, so renewal does not recycle the nodes in service); right after the
   controller reserves the gang, a gate fault is injected on its first member. With
   substitution (the default) a spare replaces that member; with `gang_substitution: false` the
   gang rolls back and the job gets a new gang (what Slurm's power saving and Cluster
   Autoscaler do). Each reports submit -> start, the decisions and the tiers used.

Each job runs `sleep` until the phase ends, so the next job cannot reuse its node. Per job:
submit -> start (Slurm's own times); the tier's work: the time inside [submit, start] covered
by playbook runs on the job's node (decision -> outcome in the ledger; a bring-up started
before the submit, for a floor or as a fabric companion, counts from the submit); and the
controller's share: the rest (reaction, passes between steps, collecting outcomes, Slurm
starting the job). Prints JSON with the load average. Never a timed assert.
"""
import argparse
import json
import os
import signal
import statistics
import time

import yaml

from lab import controller_demo as demo
from gpufleet.collection import repo_path

PHASES = {
    "cold": {"floors": {"hot": 0, "warm": 0}},
    "hot": {"floors": {"hot": None, "warm": 0}, "park_to": "hot"},
    "warm": {"floors": {"hot": 0, "warm": None}, "park_to": "warm"},
    # the gang and one spare parked: both ways start from the same supply (a substitution's
    # spare, a rollback's retry both come from the warm tier)
    "gang-substitute": {"floors": {"hot": 0, "warm": 5}, "park_to": "warm", "gate_validity": "150s"},
    "gang-rollback": {"floors": {"hot": 0, "warm": 5}, "park_to": "warm", "gate_validity": "150s",
                      "gang_substitution": False},
}
GANG = 4


def phase_policy(name, jobs):
    """The lab policy with this phase's floors; idle nodes are parked after 10 s."""
    with open(demo.POLICY) as handle:
        policy = yaml.safe_load(handle)
    pool = policy["pools"]["lab"]
    spec = PHASES[name]
    pool["floors"] = {tier: (jobs if value is None else value) for tier, value in spec["floors"].items()}
    pool["ceilings"] = {"hot": 8, "warm": 8}
    pool["idle_time"] = "10s"
    for key in ("park_to", "gate_validity", "gang_substitution"):
        if key in spec:
            pool[key] = spec[key]
    if "gate_validity" in spec:
        # a short validity would also make day-2 renewal recycle every node in service; budget
        # 0 freezes day-2 work, so the phase measures the gang alone
        pool.setdefault("day2", {})["budget"] = 0
    path = repo_path("build", "lab", "bench-policy-%s.yml" % name)
    with open(path, "w") as handle:
        yaml.safe_dump(policy, handle, sort_keys=False)
    return path


def served_by(info):
    """The playbook runs on the job's nodes that overlap its wait, clipped to [submit, start]:
    [(action, its whole duration, seconds inside the wait)] and the union of those seconds (the
    tier's work while the job waited: a bring-up started for a floor or a companion before the
    submit counts only from the submit). Ledger-only steps (reserve, substitute) take no time."""
    led = demo.ledger()
    try:
        rows = demo.records.decisions(led, since=info["submit"] - 3600)
    finally:
        led.close()
    submit, start, spans, runs = info["submit"], info["start"], [], []
    for d in sorted(rows, key=lambda d: d["at"]):
        if d["outcome"] != "ok" or d["outcome_at"] is None or not set(d["nodes"] or ()) & set(info["nodes"]):
            continue
        low, high = max(d["at"], submit), min(d["outcome_at"], start)
        if high > low:
            spans.append((low, high))
            runs.append((d["action"], round(d["outcome_at"] - d["at"], 1), round(high - low, 1)))
    covered, end = 0.0, None
    for low, high in sorted(spans):
        if end is None or low > end:
            covered += high - low
            end = high
        elif high > end:
            covered += high - end
            end = high
    return runs, round(covered, 1)


def _row(name, job_id):
    info = demo.job(job_id)
    runs, covered = served_by(info)
    total = round(info["start"] - info["submit"], 1)
    return {"phase": name, "job": job_id, "node": info["nodes"], "submit": info["submit"], "start": info["start"],
            "submit_to_start_s": total, "playbook_runs": runs, "tier_work_s": covered,
            "controller_share_s": round(total - covered, 1),
            "tier_at_submit": demo.timeline(job_id, info)["nodes"][info["nodes"][0]]["tier_at_submit"]}


def measure(name, jobs, say, spacing=0.0):
    controller = demo.Controller(policy=phase_policy(name, jobs),
                                 log=repo_path("build", "lab", "bench-%s.log" % name)).start()
    results, submitted = [], []
    try:
        if name == "hot":
            demo.wait_for("%d hot nodes" % jobs, lambda: controller.check_alive() and demo.count("hot") >= jobs, 1800)
        if name == "warm":
            demo.wait_for("%d parked nodes" % jobs,
                          lambda: controller.check_alive() and demo.count("parked") >= jobs, 1800)
        time.sleep(5)   # let the pass that reached the floor settle
        for index in range(jobs):
            job_id = demo.slurm("sbatch", "-N1", "-J", "bench-%s-%d" % (name, index), "--chdir=/tmp",
                                "--output=/dev/null", "--wrap", "sleep 100000").split()[-1]
            submitted.append(job_id)
            if spacing:         # the next one goes in while this one is being served
                time.sleep(spacing)
                continue
            demo.wait_for("job %s to start" % job_id,
                          lambda: controller.check_alive() and demo.job(job_id)["start"], 2400, poll=0.5)
        for job_id in submitted:
            demo.wait_for("job %s to start" % job_id,
                          lambda: controller.check_alive() and demo.job(job_id)["start"], 2400, poll=0.5)
        time.sleep(4)   # the serving decisions' outcomes are recorded by the next pass
        for job_id in submitted:
            row = _row(name, job_id)
            say(json.dumps(row))
            results.append(row)
    finally:
        if submitted:   # by id: scancel --name takes one name, not a list
            demo.slurm("scancel", *submitted)
        controller.stop(signal.SIGTERM)
    return results


def measure_gang(name, say):
    """One -N4 gang on parked nodes with a gate fault on its first member."""
    controller = demo.Controller(policy=phase_policy(name, GANG),
                                 log=repo_path("build", "lab", "bench-%s.log" % name)).start()
    job_id = None
    try:
        demo.wait_for("%d parked nodes" % (GANG + 1),
                      lambda: controller.check_alive() and demo.count("parked") >= GANG + 1, 1800)
        time.sleep(155)  # past gate_validity: every woken member is re-gated
        job_id = demo.sbatch(GANG, name)
        submit = demo.job(job_id)["submit"]

        def reserved():
            led = demo.ledger()
            try:
                rows = demo.records.decisions(led, since=submit - 1)
            finally:
                led.close()
            return next((d for d in rows if d["action"] == "reserve" and d["job"] == job_id), None)
        reserve = demo.wait_for("the gang's reserve decision", reserved, 300, poll=0.5)
        faulty = sorted(reserve["nodes"])[0]
        demo.sh([demo.GPUFLEET, "lab", "fault", faulty, "faulty_gpu"])
        say("%s: gang %s, fault injected on %s %.1f s after submit" % (name, reserve["nodes"], faulty,
                                                                      time.time() - submit))
        demo.wait_for("job %s to start" % job_id, lambda: controller.check_alive() and demo.job(job_id)["start"],
                      3600, poll=1)
        info = demo.job(job_id)
        ranks = demo.wait_for("the ranks' output", lambda: demo._try(demo.rank_starts, job_id, info["batch_host"]), 120)
        timeline = demo.timeline(job_id, info)
        row = {"phase": name, "job": job_id, "faulty": faulty, "nodes": info["nodes"],
               "submit_to_start_s": round(info["start"] - info["submit"], 1),
               "rank_spread_s": round(max(ranks.values()) - min(ranks.values()), 3),
               "tiers_at_submit": {n: v["tier_at_submit"] for n, v in timeline["nodes"].items()},
               "decisions": timeline["decisions"]}
        say(json.dumps(row))
        return row
    finally:
        demo.sh([demo.GPUFLEET, "lab", "clear-faults"], check=False)
        if job_id:
            demo.slurm("scancel", job_id)
        controller.stop(signal.SIGTERM)


def summary(rows):
    def med(key):
        return round(statistics.median(r[key] for r in rows), 1)
    return {"jobs": len(rows), "submit_to_start_median_s": med("submit_to_start_s"),
            "tier_work_median_s": med("tier_work_s"), "controller_share_median_s": med("controller_share_s"),
            "controller_share_max_s": max(r["controller_share_s"] for r in rows),
            "tiers_at_submit": sorted({r["tier_at_submit"] for r in rows})}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=5, help="jobs per tier (default 5)")
    parser.add_argument("--spacing", type=float, default=0.0,
                        help="cold and warm phases: submit a job every SPACING seconds instead of one at a time")
    parser.add_argument("--phases", default="cold,hot,warm,gang-substitute,gang-rollback", help="which phases, in order (default: all)")
    opts = parser.parse_args()

    def say(text):
        print(text, flush=True)
    report = {"load_before": os.getloadavg(), "spacing_s": opts.spacing, "phases": {}}
    for name in opts.phases.split(","):
        if name.startswith("gang-"):
            row = measure_gang(name, say)
            report["phases"][name] = {"summary": {k: row[k] for k in ("submit_to_start_s", "rank_spread_s")},
                                      "jobs": [row], "load": os.getloadavg()}
            continue
        rows = measure(name, opts.jobs, say, opts.spacing if name in ("cold", "warm") else 0.0)
        report["phases"][name] = {"summary": summary(rows), "jobs": rows, "load": os.getloadavg()}
        say("%s: %s" % (name, json.dumps(report["phases"][name]["summary"])))
    with open(repo_path("build", "lab", "bench-submit-to-start.json"), "w") as handle:
        json.dump(report, handle, indent=2)
    print(json.dumps({k: v["summary"] for k, v in report["phases"].items()}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
