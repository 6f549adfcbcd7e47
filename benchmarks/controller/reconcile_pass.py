"""One reconcile pass of the capacity controller against the lab's real Slurm, timed by part.

    flock /tmp/gpufleet-lab.lock .venv/bin/python benchmarks/controller/reconcile_pass.py --runs 10

Needs a lab that is up (`gpufleet lab up`); changes nothing (the pass is a dry run: read
Slurm and the ledger, build the supply, plan). Prints the median and max of each part and
the load average, for docs/benchmarks.md ("Capacity controller"). Never a timed assert.
"""
import argparse
import os
import statistics
import time

import gpufleet  # noqa: F401
from gpufleet.collection import repo_path
from gpufleet.controller import inventory, records, supply
from gpufleet.controller.demand import SlurmSource
from gpufleet.controller.planning import Planning


def one_pass(source, ledger, planning, hosts):
    t = [time.perf_counter()]
    jobs = source.jobs()
    t.append(time.perf_counter())
    nodes = source.nodes()
    t.append(time.perf_counter())
    now = time.time()
    views = supply.node_views(hosts, records.node_records(ledger), nodes, jobs, planning, now,
                              history_of=ledger.history)
    t.append(time.perf_counter())
    history = records.demand_history(ledger, since=now - 28 * 86400)
    planning.plan(jobs, views, (), (), now, history)
    t.append(time.perf_counter())
    return {"squeue": t[1] - t[0], "sinfo": t[2] - t[1], "supply (ledger)": t[3] - t[2], "plan": t[4] - t[3],
            "whole pass": t[4] - t[0]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--policy", default=repo_path("lab", "config", "capacity.yml"))
    parser.add_argument("--slurm-prefix", default="docker exec gpufleet-lab-slurmctld",
                        help="how squeue/sinfo run (default: the lab's slurmctld container)")
    parser.add_argument("--ledger", default=repo_path("build", "lab", "ledger.sqlite"))
    opts = parser.parse_args()
    hosts = inventory.load_inventory(repo_path("inventories", "lab.rack.yml"))
    source = SlurmSource(opts.slurm_prefix.split())
    ledger = records.open_ledger(opts.ledger)
    planning = Planning(opts.policy)
    runs = [one_pass(source, ledger, planning, hosts) for _ in range(opts.runs)]
    print("load average after the runs (1, 5, 15 min): %s" % " ".join("%.1f" % x for x in os.getloadavg()))
    print("%-16s %8s %8s  (%d runs, %d nodes, %d jobs in Slurm)" % ("part", "median", "max", opts.runs, len(hosts),
                                                                     len(source.jobs())))
    for part in runs[0]:
        values = [r[part] for r in runs]
        print("%-16s %7.3fs %7.3fs" % (part, statistics.median(values), max(values)))


if __name__ == "__main__":
    main()
