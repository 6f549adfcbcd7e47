"""Transitions per second on the lifecycle ledger, SQLite file vs PostgreSQL.

Each transition is what ``node_state`` does: one write transaction (write lock, read the
node, check the edge, append the transition, update the node) and COMMIT. Workers are OS
processes, each with its own connection, cycling its own nodes through
ready -> hot -> parked -> waking -> ready. Prints one line per run and the load average.

    .venv/bin/python benchmarks/ledger/bench_transitions.py --backend sqlite
    .venv/bin/python benchmarks/ledger/bench_transitions.py --backend postgresql --url "$GPUFLEET_TEST_PG_URL"

PostgreSQL runs in a throwaway schema (dropped afterwards); SQLite in a temporary file.
The password of --url is never printed.
"""
import argparse
import contextlib
import multiprocessing
import os
import tempfile
import time
import uuid

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import ledger_location
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger

CYCLE = {"ready": "hot", "hot": "parked", "parked": "waking", "waking": "ready"}
TO_READY = ("enrolled", "inspected", "imaging", "configuring", "validating", "ready")


@contextlib.contextmanager
def fresh_ledger(backend, url):
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            yield os.path.join(folder, "bench.sqlite")
        return
    import psycopg

    schema = "bench_" + uuid.uuid4().hex[:10]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA %s" % schema)
    try:
        joiner = "&" if "?" in url else "?"
        yield "%s%soptions=-csearch_path%%3D%s" % (url, joiner, schema)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DROP SCHEMA %s CASCADE" % schema)


def worker(location, nodes, count, start, done):
    book = Ledger(location)
    start.wait()
    for i in range(count):
        node = nodes[i % len(nodes)]
        with book.transaction() as cur:
            state = book.get(node, cur)["state"]
            book.apply(cur, node, CYCLE[state], "bench", "cycle")
    book.close()
    done.put(count)


def run(location, processes, per_process, nodes_per_process):
    setup = Ledger(location)
    groups = []
    for p in range(processes):
        names = ["p%d-n%d" % (p, n) for n in range(nodes_per_process)]
        for name in names:
            for target in TO_READY:
                setup.transition(name, target, "bench", "setup")
        groups.append(names)
    setup.close()
    start, done = multiprocessing.Barrier(processes + 1), multiprocessing.Queue()
    procs = [multiprocessing.Process(target=worker, args=(location, g, per_process, start, done))
             for g in groups]
    for proc in procs:
        proc.start()
    start.wait()
    began = time.perf_counter()
    total = sum(done.get(timeout=600) for _p in procs)
    elapsed = time.perf_counter() - began
    for proc in procs:
        proc.join(60)
    if any(p.exitcode != 0 for p in procs):
        raise SystemExit("a worker failed: exit codes %s" % [p.exitcode for p in procs])
    return total, elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), required=True)
    parser.add_argument("--url", default=os.environ.get("GPUFLEET_TEST_PG_URL"),
                        help="PostgreSQL URL (default $GPUFLEET_TEST_PG_URL)")
    parser.add_argument("--processes", default="1,4,8", help="comma-separated worker counts")
    parser.add_argument("--transitions", type=int, default=2000, help="transitions per run (split over workers)")
    parser.add_argument("--nodes", type=int, default=4, help="nodes per worker")
    args = parser.parse_args()
    if args.backend == "postgresql" and not args.url:
        raise SystemExit("--backend postgresql needs --url or $GPUFLEET_TEST_PG_URL")
    shown = "temporary file" if args.backend == "sqlite" else ledger_location.mask(args.url)
    print("backend %s (%s), load average before: %s" % (args.backend, shown, os.getloadavg()))
    for processes in [int(p) for p in args.processes.split(",")]:
        with fresh_ledger(args.backend, args.url) as location:
            total, elapsed = run(location, processes, args.transitions // processes, args.nodes)
        print("%-10s processes=%d transitions=%d elapsed=%.2fs -> %.0f transitions/s  (load %.2f)"
              % (args.backend, processes, total, elapsed, total / elapsed, os.getloadavg()[0]))


if __name__ == "__main__":
    main()
