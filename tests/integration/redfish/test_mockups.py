"""The DMTF public mockups, served read-only over TLS, give correct redfish_info facts."""
import glob
import json
import os

import pytest

from tests.helpers import shared_fixture
from tests.integration.redfish.lab_fixture import free_port, load_lab_module, run_playbook

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("mockup", ["public-tower", "public-rackmount1"])
def test_redfish_info_on_mockup(lab, mockup):
    folder = shared_fixture("redfish-mockups", mockup)
    pki = os.path.join(lab.cfg["state_dir"], "pki")
    server = load_lab_module("mockup_server").serve(
        folder, "127.0.11.1", free_port("127.0.11.1"), os.path.join(pki, "server.pem"),
        os.path.join(pki, "server.key"))
    import threading
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        address = "127.0.11.1:%d" % server.server_address[1]
        # Expected identity comes from the mockup's own System JSON, not a copy of it.
        systems = glob.glob(os.path.join(folder, "Systems", "*", "index.json"))
        assert len(systems) == 1, systems
        with open(systems[0]) as handle:
            raw = json.load(handle)
        rc, tasks, out = run_playbook("mockup.yml", dict(rf_mockup=address, rf_ca=lab.ca,
                                                         rf_mockup_name=mockup,
                                                         rf_expect_system=dict(id=raw["Id"],
                                                                               serial=raw.get("SerialNumber"))))
        assert rc == 0, out[-4000:]
        assert tasks["Read facts"]["facts"]["unsupported"] == []
    finally:
        server.shutdown()
