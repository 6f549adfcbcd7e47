"""``gpufleet deploy order|wait|serve``: an order validated and written, never its token printed;
wait's exit codes for imaged, failed and timeout; serve over TLS until SIGTERM, logging no token."""
import json
import os
import re
import select
import signal
import stat
import subprocess
import sys
import time

import pytest

from gpufleet import main as cli_main
from gpufleet.commands import deploy
from gpufleet.deploy.agent import Reporter
from gpufleet.deploy.callbacks import InstallBook
from gpufleet.deploy.errors import DeployError
from gpufleet.deploy.fetch import Fetcher
from tests.unit.gpufleet.deploy.tls_factory import self_signed

UUID = "4C4C4544-0042-3510-8048-B4C04F4A3332"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGsomekey ctl"


@pytest.fixture
def key_file(tmp_path):
    path = tmp_path / "ctl.pub"
    path.write_text(KEY + "\n")
    return str(path)


def _order_argv(state, key_file, *extra, node="n1"):
    return ["deploy", "order", node, "--state-dir", state, "--uuid", UUID,
            "--image-url", "https://images.example/v1/v1.disk.raw.gz", "--callback-url", "https://ctl.example:8443",
            "--root-device", "serial=S1", "--root-device", "size=>= 800", "--hostname", node,
            "--ssh-key-file", key_file, "--image-version", "v1"] + list(extra)


def _token(state):
    order = json.load(open(os.path.join(state, "orders", UUID.lower() + ".json")))
    return order["callback"]["token"]


def test_order_writes_the_validated_order_and_prints_its_path_never_the_token(tmp_path, key_file, capsys):
    state = str(tmp_path / "state")
    argv = _order_argv(state, key_file, "--address", "10.0.8.21/24", "--gateway", "10.0.8.1", "--dns", "10.0.0.53")
    assert cli_main.main(argv) == 0
    out = capsys.readouterr()
    path = os.path.join(state, "orders", UUID.lower() + ".json")
    assert out.out.strip() == path and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    order, token = json.load(open(path)), _token(state)
    assert order["callback"]["url"] == "https://ctl.example:8443/v1/nodes/n1/events"
    assert order["root_device"] == {"serial": "S1", "size": ">= 800"} and order["image_version"] == "v1"
    assert order["seed"] == {"hostname": "n1", "ssh_key": KEY, "address": "10.0.8.21/24", "gateway": "10.0.8.1",
                             "dns": ["10.0.0.53"]}
    assert token not in out.out + out.err
    assert cli_main.main(argv + ["--json"]) == 0
    out = capsys.readouterr()
    result = json.loads(out.out)
    assert result["order"] == path and result["served_as"] == "orders/%s.json" % UUID.lower()
    assert result["run"] == InstallBook(state).record("n1")["run"]
    assert _token(state) != token and _token(state) not in out.out + out.err and token not in out.out


@pytest.mark.parametrize("extra,fragment", [
    (["--hostname", "Bad_Host"], "--hostname"),
    (["--gateway", "10.0.8.1"], "--address"),
    (["--address", "10.0.8.21"], "--address"),
    (["--root-device", "serial"], "not KEY=VALUE"),
    (["--root-device", "colour=blue"], "colour"),
    (["--root-device", "serial=S2"], "given twice"),
    (["--callback-url", "http://ctl.example:8080"], "not https"),
    (["--callback-url", "https://ctl.example/v1/nodes/n2/events"], "another node"),
    (["--uuid", "r42n01"], "not a UUID"),
])
def test_a_bad_order_exits_2_naming_the_field_and_writes_nothing(tmp_path, key_file, capsys, extra, fragment):
    state = str(tmp_path / "state")
    assert cli_main.main(_order_argv(state, key_file) + extra) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpufleet deploy order: error:") and fragment in err and len(err.splitlines()) == 1
    assert not os.path.exists(state)


def test_an_ssh_key_file_with_two_keys_or_none_is_refused(tmp_path, key_file, capsys):
    two = tmp_path / "two.pub"
    two.write_text(KEY + "\n" + KEY + "\n")
    assert cli_main.main(_order_argv(str(tmp_path / "s"), str(two))) == 2
    assert "holds 2 lines" in capsys.readouterr().err
    assert cli_main.main(_order_argv(str(tmp_path / "s"), str(tmp_path / "missing.pub"))) == 2
    assert "cannot read --ssh-key-file" in capsys.readouterr().err


def test_http_is_allowed_only_when_asked(tmp_path, key_file):
    argv = _order_argv(str(tmp_path / "state"), key_file, "--callback-url", "http://10.0.0.1:8080", "--allow-http")
    assert cli_main.main(argv) == 0
    assert json.load(open(tmp_path / "state" / "orders" / (UUID.lower() + ".json")))["allow_http"] is True


def test_the_callback_url_is_the_service_url_plus_the_nodes_events_path():
    assert deploy.events_url("https://c:8443/", "n1") == "https://c:8443/v1/nodes/n1/events"
    assert deploy.events_url("https://c/deploy", "n1") == "https://c/deploy/v1/nodes/n1/events"
    assert deploy.events_url("https://c/v1/nodes/n1/events", "n1") == "https://c/v1/nodes/n1/events"
    with pytest.raises(DeployError, match="callback-url"):
        deploy.events_url("c:8443", "n1")


def _ordered(tmp_path, key_file, capsys):
    state = str(tmp_path / "state")
    assert cli_main.main(_order_argv(state, key_file)) == 0
    capsys.readouterr()
    return state, InstallBook(state), _token(state)


def _post(book, token, state, step, **detail):
    event = dict(detail, node="n1", state=state, step=step)
    assert book.receive("n1", "Bearer " + token, json.dumps(event).encode())[0] == 200


def test_wait_exits_0_on_imaged_printing_version_disk_serial_and_digest(tmp_path, key_file, capsys):
    state, book, token = _ordered(tmp_path, key_file, capsys)
    _post(book, token, "running", "write", seconds=3.2, disk="/dev/nvme0n1", bytes=10, total=20)
    _post(book, token, "imaged", "done", seconds=61.5, version="2026.09.1", disk="/dev/nvme0n1", serial="S1",
          sha256="ab" * 32)
    assert cli_main.main(["deploy", "wait", "n1", "--state-dir", state, "--timeout", "5"]) == 0
    out = capsys.readouterr()
    assert "+3.2s  running  write 10/20 bytes" in out.out
    assert "imaged: version 2026.09.1 on /dev/nvme0n1 (serial S1), sha256 %s" % ("ab" * 32) in out.out
    assert token not in out.out + out.err


def test_wait_exits_1_on_failed_printing_the_step_and_reason(tmp_path, key_file, capsys):
    state, book, token = _ordered(tmp_path, key_file, capsys)
    _post(book, token, "failed", "root device hints", seconds=4.0, reason="several disks match")
    assert cli_main.main(["deploy", "wait", "n1", "--state-dir", state, "--timeout", "5", "--json"]) == 1
    out = capsys.readouterr()
    assert json.loads(out.out)["outcome"] == "failed" and token not in out.out + out.err
    assert cli_main.main(["deploy", "wait", "n1", "--state-dir", state, "--timeout", "5"]) == 1
    assert "failed at root device hints: several disks match" in capsys.readouterr().out


def test_wait_times_out_with_3_naming_the_last_event(tmp_path, key_file, capsys):
    state, book, token = _ordered(tmp_path, key_file, capsys)
    assert cli_main.main(["deploy", "wait", "n1", "--state-dir", state, "--timeout", "0.1"]) == deploy.EXIT_TIMEOUT
    assert "no event yet (the order has not been fetched)" in capsys.readouterr().out
    book.order_for(UUID)
    _post(book, token, "running", "seed", seconds=70.1, hostname="n1")
    assert cli_main.main(["deploy", "wait", "n1", "--state-dir", state, "--timeout", "0.1"]) == 3
    out = capsys.readouterr().out
    assert re.search(r"timed out after 0\.1s waiting for n1; last event: \+70\.1s\s+running\s+seed hostname=n1", out)


def test_wait_prints_events_as_they_arrive(tmp_path, key_file, capsys):
    state, book, token = _ordered(tmp_path, key_file, capsys)
    arriving = [("running", "write", 1.0), ("running", "seed", 2.0), ("imaged", "done", 3.0)]
    seen = []

    class Out:
        def write(self, text):
            seen.append(text)

        def flush(self):
            pass

    def sleep(_seconds):        # each poll, the installer reports one more step
        state_, step, seconds = arriving.pop(0)
        _post(book, token, state_, step, seconds=seconds)
        seen.append("--poll--")

    code, result = deploy.wait_for(book, "n1", 60, out=Out(), clock=lambda: 0.0, sleep=sleep, poll=0)
    lines = [t.strip() for t in seen if t.strip()]
    assert code == 0 and result["outcome"] == "imaged"
    assert lines[:4] == ["--poll--", "+1.0s  running  write", "--poll--", "+2.0s  running  seed"]


def test_wait_for_an_unknown_node_or_a_replaced_install_exits_1(tmp_path, key_file, capsys):
    state, book, _token_ = _ordered(tmp_path, key_file, capsys)
    assert cli_main.main(["deploy", "wait", "n9", "--state-dir", state]) == 1
    err = capsys.readouterr().err
    assert "no order for n9" in err and "Traceback" not in err

    def reorder(_seconds):
        assert cli_main.main(_order_argv(state, key_file)) == 0

    code, result = deploy.wait_for(book, "n1", 60, out=None, clock=lambda: 0.0, sleep=reorder, poll=0)
    assert code == 1 and result["outcome"] == "replaced"


def test_serve_answers_over_tls_logs_each_request_without_the_token_and_stops_on_sigterm(tmp_path, key_file,
                                                                                         capsys):
    cert, key = self_signed(tmp_path / "tls")
    state, _book, token = _ordered(tmp_path, key_file, capsys)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "gpufleet.main", "deploy", "serve", "--state-dir", state,
                             "--cert", cert, "--key", key, "--address", "127.0.0.1", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        first, deadline = b"", time.time() + 60
        while b"\n" not in first and time.time() < deadline:
            if select.select([proc.stderr], [], [], 1)[0]:
                first += os.read(proc.stderr.fileno(), 4096)
        port = int(re.search(rb"serving https://127\.0\.0\.1:(\d+)", first).group(1))
        fetcher = Fetcher(ca_file=cert, timeout=10)
        order = json.loads(fetcher.get("https://127.0.0.1:%d/orders/%s.json" % (port, UUID.lower()), 1 << 20))
        url = "https://127.0.0.1:%d/v1/nodes/n1/events" % port
        quiet = dict(context=fetcher.context, console=lambda line: None)
        assert Reporter("n1", url, order["callback"]["token"], **quiet).send("running", "write")
        assert not Reporter("n1", url, "not-" + token, **quiet).send("running", "write")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    log = (first + err).decode()
    assert proc.returncode == 0, log
    assert re.search(r"127\.0\.0\.1 GET /orders/%s\.json 200 order served" % UUID.lower(), log)
    assert "POST /v1/nodes/n1/events 200 recorded running write" in log and "events 401" in log
    assert "SIGTERM: stopping" in log and "Traceback" not in log
    assert token not in log + out.decode()


def test_serve_with_a_missing_certificate_is_one_error_line(tmp_path, capsys):
    argv = ["deploy", "serve", "--state-dir", str(tmp_path / "s"), "--cert", str(tmp_path / "no.pem"),
            "--key", str(tmp_path / "no.key")]
    assert cli_main.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("gpufleet deploy: error: serve: --cert") and len(err.splitlines()) == 1
