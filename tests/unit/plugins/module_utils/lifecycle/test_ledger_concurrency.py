"""Eight OS processes hammer transitions of the same nodes in one ledger: nothing is lost."""
import multiprocessing

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import ledger_admin
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger

from .conftest import walk

NODES = ["n%d" % i for i in range(4)]
# A warmth cycle every process drives every node around: each step is a legal edge.
CYCLE = {"ready": "hot", "hot": "parked", "parked": "waking", "waking": "ready"}
PROCESSES = 8
ROUNDS = 12


def _hammer(location, worker, results):
    book = Ledger(location)
    done = 0
    for round_no in range(ROUNDS):
        for offset in range(len(NODES)):  # each worker starts at a different node
            node = NODES[(worker + offset) % len(NODES)]
            with book.transaction() as cur:
                state = book.get(node, cur)["state"]
                result = book.apply(cur, node, CYCLE[state], "w%d" % worker, "round %d" % round_no)
            done += int(result["changed"])
    book.close()
    results.put(done)


def test_processes_hammering_overlapping_nodes_lose_and_duplicate_nothing(ledger_url):
    setup = Ledger(ledger_url)
    for node in NODES:
        walk(setup, node, ["enrolled", "inspected", "imaging", "configuring", "validating", "ready"])
    setup.close()
    results = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=_hammer, args=(ledger_url, i, results))
             for i in range(PROCESSES)]
    for proc in procs:
        proc.start()
    for proc in procs:  # a worker that died (say, a duplicate seq) exits non-zero at once
        proc.join(300)
    assert [p.exitcode for p in procs] == [0] * PROCESSES
    counts = [results.get(timeout=10) for _unused in procs]
    assert sum(counts) == PROCESSES * ROUNDS * len(NODES)
    book = Ledger(ledger_url)
    history = book.history()
    assert len(history) == len(NODES) * 6 + sum(counts)
    for node in NODES:
        seqs = [h["seq"] for h in book.history(node)]
        assert seqs == list(range(1, len(seqs) + 1))
    assert ledger_admin.check(book) == []
