"""Fixtures for the fault matrix: the emulated BMC rack of the Redfish tests, a media server
and the fault-injecting proxy in front of the rack."""
import importlib.util

import pytest

from tests.helpers import need
from tests.integration.redfish.faultproxy import rack_proxy
from tests.integration.redfish.lab_fixture import Lab, MediaServer


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    need(importlib.util.find_spec("sushy_tools") is not None,
         "sushy-tools is not installed in the venv (make venv)")
    lab = Lab(tmp_path_factory.mktemp("faults-lab")).start()
    yield lab
    lab.stop()


@pytest.fixture(scope="module")
def media(tmp_path_factory):
    server = MediaServer(tmp_path_factory.mktemp("faults-media"), address="127.0.11.251")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def proxy(lab):
    proxy = rack_proxy(lab, "127.0.11.4")
    yield proxy
    proxy.stop()
