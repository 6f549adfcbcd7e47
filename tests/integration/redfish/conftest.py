"""Session fixtures for the Redfish integration tests (emulated racks, media server)."""
import importlib.util

import pytest

from tests.helpers import need
from tests.integration.redfish.lab_fixture import Lab, MediaServer


def _have_sushy_tools():
    return importlib.util.find_spec("sushy_tools") is not None


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    need(_have_sushy_tools(), "sushy-tools is not installed in the venv (make venv)")
    lab = Lab(tmp_path_factory.mktemp("redfish-lab")).start()
    yield lab
    lab.stop()


@pytest.fixture(scope="session")
def media(tmp_path_factory):
    server = MediaServer(tmp_path_factory.mktemp("redfish-media"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def conn(lab):
    """Connection vars every playbook takes."""
    return dict(rf_user=lab.cfg["username"], rf_password=lab.cfg["password"], rf_ca=lab.ca)
