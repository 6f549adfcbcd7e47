"""Fixtures for the Redfish unit tests; the fake BMC itself is in fake_bmc.py."""
import pytest

from tests.unit.plugins.module_utils.redfish.fake_bmc import (
    Clock, FakeTransport, load_mockup, load_tree, make_client, ok,
)


class _Kit:
    """Everything a test needs, as one fixture (conftest modules are not importable)."""
    FakeTransport = FakeTransport
    Clock = Clock
    make_client = staticmethod(make_client)
    load_tree = staticmethod(load_tree)
    load_mockup = staticmethod(load_mockup)
    ok = staticmethod(ok)


@pytest.fixture
def rf():
    return _Kit


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def generic():
    return FakeTransport(load_tree("generic"))
