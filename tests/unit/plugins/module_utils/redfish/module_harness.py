"""Run a redfish_* module's main() in-process against fake BMCs (no sockets)."""
import json

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import client as rf_client
from tests.unit.plugins.module_utils.redfish.fake_bmc import FakeTransport, load_tree


class Exit(Exception):
    def __init__(self, result, failed):
        super().__init__(result)
        self.result = result
        self.failed = failed


def run(monkeypatch, capsys, module, args, transports=None, check_mode=False, diff=False):
    """Run ``module.main()``; return (result, failed). ``transports`` maps baseuri -> fake."""
    transports = transports if transports is not None else {}

    def make_transport(verify=True):
        return transports.setdefault("_last", FakeTransport(load_tree("generic")))

    def by_host(verify=True):
        return make_transport(verify)

    monkeypatch.setattr(rf_client, "RequestsTransport", by_host)
    if transports:
        monkeypatch.setattr(rf_client.RedfishClient, "__init__", _init_with(transports))
    # Record warnings at the call: ansible-core keeps them in process-global state, which
    # other tests in the same process (inventory plugin loading) can leave reconfigured.
    warned = []
    original_warn = basic.AnsibleModule.warn

    def warn(self, warning):
        warned.append(warning)
        return original_warn(self, warning)
    monkeypatch.setattr(basic.AnsibleModule, "warn", warn)
    args = dict(args, _ansible_check_mode=check_mode, _ansible_diff=diff)
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            module.main()
    out = json.loads(capsys.readouterr().out)
    out["_warned"] = warned
    return out, exc.value.code != 0


def _init_with(transports):
    original = rf_client.RedfishClient.__init__

    def init(self, baseuri, *a, **kw):
        host = baseuri.split("://", 1)[-1]
        if host in transports:
            kw["transport"] = transports[host]
        kw["sleep"] = lambda s: None
        original(self, baseuri, *a, **kw)
    return init
