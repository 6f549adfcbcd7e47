import multiprocessing

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import lease
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger


def test_one_holder_at_a_time_and_takeover_after_expiry(ledger):
    assert lease.acquire_lease(ledger, "capacity", "a", 30, 100.0) == (True, "a", 130.0)
    assert lease.acquire_lease(ledger, "capacity", "b", 30, 110.0) == (False, "a", 130.0)
    assert lease.renew_lease(ledger, "capacity", "a", 30, 120.0) == (True, "a", 150.0)
    assert lease.acquire_lease(ledger, "capacity", "b", 30, 149.9) == (False, "a", 150.0)
    assert lease.lease_holder(ledger, "capacity", 149.9) == ("a", 150.0)
    # a stops renewing (it died): b takes over at the first attempt after expiry
    assert lease.acquire_lease(ledger, "capacity", "b", 30, 150.0) == (True, "b", 180.0)
    assert lease.renew_lease(ledger, "capacity", "a", 30, 151.0) == (False, "b", 180.0)
    assert lease.release_lease(ledger, "capacity", "a") is False
    assert lease.release_lease(ledger, "capacity", "b") is True
    assert lease.lease_holder(ledger, "capacity", 151.0) == (None, None)
    assert lease.acquire_lease(ledger, "capacity", "a", 30, 152.0)[0] is True


def test_leases_are_independent_by_name_and_reacquire_extends(ledger):
    assert lease.acquire_lease(ledger, "pool-a", "x", 10, 0.0)[0]
    assert lease.acquire_lease(ledger, "pool-b", "y", 10, 0.0)[0]
    assert lease.acquire_lease(ledger, "pool-a", "x", 10, 5.0) == (True, "x", 15.0)


@pytest.mark.parametrize("args", [("", "a", 30), ("n", "", 30), ("n", "a", 0)])
def test_bad_lease_requests_are_refused(ledger, args):
    with pytest.raises(LedgerError):
        lease.acquire_lease(ledger, *(args + (1.0,)))


def _contend(location, holder, barrier, results):
    book = Ledger(location)
    barrier.wait()
    acquired, current, _expires = lease.acquire_lease(book, "capacity", holder, 60, 1000.0)
    results.put((holder, acquired, current))
    book.close()


def test_many_processes_racing_for_a_free_lease_get_exactly_one_holder(ledger_url):
    Ledger(ledger_url).close()
    barrier, results = multiprocessing.Barrier(8), multiprocessing.Queue()
    procs = [multiprocessing.Process(target=_contend, args=(ledger_url, "c%d" % i, barrier, results))
             for i in range(8)]
    for proc in procs:
        proc.start()
    outcome = [results.get(timeout=60) for _unused in procs]
    for proc in procs:
        proc.join(60)
    winners = [holder for holder, acquired, _c in outcome if acquired]
    assert len(winners) == 1
    assert {current for _h, _a, current in outcome} == set(winners)
