import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger


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
def ledger(tmp_path, clock):
    book = Ledger(str(tmp_path / "ledger.sqlite"), clock=clock)
    yield book
    book.close()


def walk(ledger, node, path, sku="lab", who="test"):
    for target in path:
        ledger.transition(node, target, who, "step to %s" % target, sku=sku)
