"""Fixtures of the ledger suite: every test runs on SQLite and on PostgreSQL.

PostgreSQL comes from GPUFLEET_TEST_PG_URL (scripts/ci-postgres.sh prints one); each test
gets its own schema in that database, dropped afterwards. Without the variable the
PostgreSQL half skips, except in CI (GPUFLEET_CI=1), where it fails.
"""
import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger

from tests.pg import ledger_url  # noqa: F401  pylint: disable=unused-import  (fixture)


class FakeClock:
    def __init__(self, start=1_800_000_000.0):
        self.now = start

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def ledger(ledger_url, clock):  # noqa: F811  pylint: disable=redefined-outer-name
    book = Ledger(ledger_url, clock=clock)
    yield book
    book.close()


def walk(ledger, node, path, sku="lab", who="test"):
    for target in path:
        ledger.transition(node, target, who, "step to %s" % target, sku=sku)
