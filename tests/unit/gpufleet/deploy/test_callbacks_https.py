"""gpufleet.deploy.callbacks over real TLS, driven by the agent's own Fetcher and Reporter as an
installer would: the order written by one book is served by a service on another book over the
same directory, once; callbacks reach the reader; a restarted service forgets nothing; no log
line carries the token."""
import json

import pytest

from gpufleet.commands.deploy import wait_for
from gpufleet.deploy.agent import Reporter
from gpufleet.deploy.callbacks import DeployService, InstallBook
from gpufleet.deploy.errors import DeployError
from gpufleet.deploy.fetch import Fetcher
from gpufleet.deploy.orders import install_order, new_token
from tests.unit.gpufleet.deploy.tls_factory import self_signed

UUID = "4c4c4544-0042-3510-8048-b4c04f4a3332"
SEED = {"hostname": "n1", "ssh_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGsomekey ctl"}


@pytest.fixture
def tls(tmp_path):
    return self_signed(tmp_path / "tls")


def _service(state, tls, log):
    return DeployService(InstallBook(state), "127.0.0.1", 0, tls[0], tls[1], log=log.append)


def _write_order(state, port, token):
    url = "https://127.0.0.1:%d/v1/nodes/n1/events" % port
    InstallBook(state).expect("n1", UUID, install_order("n1", "https://img/v1.raw.gz", {"serial": "S1"}, SEED,
                                                        url, token))


def _reporter(order_or_url, token, fetcher):
    url = order_or_url["callback"]["url"] if isinstance(order_or_url, dict) else order_or_url
    return Reporter("n1", url, token, context=fetcher.context, console=lambda line: None)


def test_an_order_written_by_one_book_is_fetched_once_and_its_callbacks_reach_the_reader(tmp_path, tls):
    state, log = str(tmp_path / "state"), []
    service = _service(state, tls, log)
    try:
        token = new_token()
        _write_order(state, service.port, token)
        fetcher = Fetcher(ca_file=tls[0], timeout=10)
        base = "https://127.0.0.1:%d/orders/" % service.port
        order = json.loads(fetcher.get(base + UUID + ".json", 1 << 20))
        assert order["node"] == "n1" and order["callback"]["token"] == token
        with pytest.raises(DeployError, match="410"):
            fetcher.get(base + UUID + ".json", 1 << 20)
        reporter = _reporter(order, order["callback"]["token"], fetcher)
        assert reporter.send("running", "write", {"bytes": 1, "total": 2})
        assert not _reporter(order, new_token(), fetcher).send("running", "write")     # 401
        assert reporter.send("imaged", "done", {"version": "v1", "disk": "/dev/nvme0n1", "serial": "S1",
                                                "sha256": "ab"})
        assert not reporter.send("running", "write")                                   # consumed: 403
    finally:
        service.stop()
    reader = InstallBook(state)
    assert [(e["state"], e["step"]) for e in reader.events("n1")] == [("running", "write"), ("imaged", "done")]
    code, result = wait_for(reader, "n1", 1, out=None)
    assert code == 0 and result["outcome"] == "imaged"
    statuses = [line.split()[3] for line in log if " GET " in line or " POST " in line]
    assert statuses == ["200", "410", "200", "401", "200", "403"], log
    assert log and not [line for line in log if token in line]


def test_a_restarted_service_refuses_the_order_again_and_still_takes_the_nodes_callbacks(tmp_path, tls):
    state, log = str(tmp_path / "state"), []
    first = _service(state, tls, log)
    port = first.port
    token = new_token()
    _write_order(state, port, token)
    fetcher = Fetcher(ca_file=tls[0], timeout=10)
    order_url = "https://127.0.0.1:%d/orders/%s.json" % (port, UUID)
    try:
        order = json.loads(fetcher.get(order_url, 1 << 20))
        assert _reporter(order, token, fetcher).send("running", "verify manifest")
    finally:
        first.stop()
    second = DeployService(InstallBook(state), "127.0.0.1", port, tls[0], tls[1], log=log.append)
    try:
        with pytest.raises(DeployError, match="410"):
            fetcher.get(order_url, 1 << 20)
        assert _reporter(order, token, fetcher).send("running", "seed")
        assert not _reporter(order, new_token(), fetcher).send("failed", "seed", {"reason": "forged"})
        assert _reporter(order, token, fetcher).send("failed", "grow root", {"reason": "growpart exited 1"})
    finally:
        second.stop()
    events = InstallBook(state).events("n1")
    assert [(e["state"], e["step"]) for e in events] == [
        ("running", "verify manifest"), ("running", "seed"), ("failed", "grow root")]
    assert not [line for line in log if token in line]


def test_after_a_new_order_the_old_token_is_refused_and_leaves_no_event(tmp_path, tls):
    state, log = str(tmp_path / "state"), []
    service = _service(state, tls, log)
    try:
        old, new = new_token(), new_token()
        _write_order(state, service.port, old)
        _write_order(state, service.port, new)
        fetcher = Fetcher(ca_file=tls[0], timeout=10)
        url = "https://127.0.0.1:%d/v1/nodes/n1/events" % service.port
        assert not _reporter(url, old, fetcher).send("imaged", "done")
        assert InstallBook(state).events("n1") == []
        assert _reporter(url, new, fetcher).send("running", "write")
    finally:
        service.stop()
    assert [line.split()[3] for line in log if " POST " in line] == ["401", "200"]
    assert not [line for line in log if old in line or new in line]


def test_a_client_that_stalls_in_the_handshake_does_not_hold_up_others(tmp_path, tls):
    import socket
    state, log = str(tmp_path / "state"), []
    service = _service(state, tls, log)
    stalled = socket.create_connection(("127.0.0.1", service.port))      # connects, never says hello
    try:
        _write_order(state, service.port, new_token())
        fetcher = Fetcher(ca_file=tls[0], timeout=5)
        assert json.loads(fetcher.get("https://127.0.0.1:%d/orders/%s.json" % (service.port, UUID), 1 << 20))
    finally:
        stalled.close()
        service.stop()


def test_a_bad_certificate_or_a_port_in_use_is_one_error_naming_the_fix(tmp_path, tls):
    state, log = str(tmp_path / "state"), []
    with pytest.raises(DeployError, match="cannot load the certificate"):
        DeployService(InstallBook(state), "127.0.0.1", 0, tls[1], tls[1], log=log.append)
    service = _service(state, tls, log)
    try:
        with pytest.raises(DeployError, match="is in use; fix"):
            DeployService(InstallBook(state), "127.0.0.1", service.port, tls[0], tls[1], log=log.append)
    finally:
        service.stop()
