"""gpufleet.deploy.callbacks: each order served once; callbacks only with the node's token, and
none after the final one. The HTTPS test drives the receiver with the agent's own Fetcher and
Reporter, as an installer would."""
import json

import pytest

from gpufleet.deploy.agent import Reporter
from gpufleet.deploy.callbacks import DeployService, InstallBook
from gpufleet.deploy.errors import DeployError
from gpufleet.deploy.fetch import Fetcher
from gpufleet.deploy.orders import install_order, new_token
from lab.bmc.pki import ensure_pki

UUID = "4c4c4544-0042-3510-8048-b4c04f4a3332"
SEED = {"hostname": "n1", "ssh_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGsomekey ctl"}


def _order(token, url="https://127.0.0.1:1/v1/nodes/n1/events"):
    return install_order("n1", "https://img/v1.raw.gz", {"serial": "S1"}, SEED, url, token)


def _event(state="running", step="write", node="n1"):
    return json.dumps({"node": node, "state": state, "step": step}).encode()


def test_the_order_is_served_once_then_gone():
    book = InstallBook()
    book.expect("n1", UUID.upper(), _order(new_token()))
    status, body = book.order_for(UUID)
    assert status == 200 and json.loads(body)["node"] == "n1"
    assert book.order_for(UUID)[0] == 410
    assert book.order_for("4c4c4544-0000-0000-0000-000000000000")[0] == 404
    assert book.order_for("../../etc/passwd")[0] == 404


def test_only_the_nodes_token_is_accepted_and_the_final_event_consumes_it():
    book, token = InstallBook(clock=lambda: 5.0), new_token()
    book.expect("n1", UUID, _order(token))
    assert book.receive("n1", None, _event())[0] == 401
    assert book.receive("n1", "Bearer " + new_token(), _event())[0] == 401
    assert book.receive("n1", "Basic " + token, _event())[0] == 401
    assert book.receive("n2", "Bearer " + token, _event(node="n2"))[0] == 403
    assert book.receive("n1", "Bearer " + token, b"not json")[0] == 400
    assert book.receive("n1", "Bearer " + token, _event(state="done"))[0] == 400
    assert book.receive("n1", "Bearer " + token, _event(node="n2"))[0] == 400
    assert book.receive("n1", "Bearer " + token, _event())[0] == 200
    assert book.outcome("n1") is None
    assert book.receive("n1", "Bearer " + token, _event("imaged", "done"))[0] == 200
    assert book.outcome("n1") == "imaged"
    assert book.receive("n1", "Bearer " + token, _event("failed", "write"))[0] == 403   # one-time
    assert [(e["state"], e["step"], e["received_at"]) for e in book.events("n1")] == [
        ("running", "write", 5.0), ("imaged", "done", 5.0)]


def test_a_new_install_of_the_node_replaces_the_old_token():
    book, old, new = InstallBook(), new_token(), new_token()
    book.expect("n1", UUID, _order(old))
    book.expect("n1", UUID, _order(new))
    assert book.receive("n1", "Bearer " + old, _event())[0] == 401
    assert book.receive("n1", "Bearer " + new, _event())[0] == 200


def test_over_https_the_agent_fetches_its_order_once_and_reports_to_the_receiver(tmp_path):
    pki = ensure_pki(str(tmp_path / "pki"), ["127.0.0.1"])
    seen = []
    book = InstallBook(on_event=lambda node, event: seen.append((node, event["state"], event["step"])))
    service = DeployService(book, "127.0.0.1", 0, pki["server.pem"], pki["server.key"])
    try:
        token = new_token()
        book.expect("n1", UUID, _order(token, service.callback_url("127.0.0.1", "n1")))
        fetcher = Fetcher(ca_file=pki["ca.pem"], timeout=10)
        base = "https://127.0.0.1:%d/orders/" % service.port
        order = json.loads(fetcher.get(base + UUID + ".json", 1 << 20))
        with pytest.raises(DeployError, match="410"):
            fetcher.get(base + UUID + ".json", 1 << 20)
        reporter = Reporter("n1", order["callback"]["url"], order["callback"]["token"],
                            context=fetcher.context, console=lambda line: None)
        assert reporter.send("running", "write", {"bytes": 1})
        assert reporter.send("imaged", "done", {"sha256": "ab"}, attempts=1)
        assert not Reporter("n1", order["callback"]["url"], token, context=fetcher.context,
                            console=lambda line: None).send("running", "write")   # consumed
    finally:
        service.stop()
    assert seen == [("n1", "running", "write"), ("n1", "imaged", "done")]
    assert book.outcome("n1") == "imaged"
