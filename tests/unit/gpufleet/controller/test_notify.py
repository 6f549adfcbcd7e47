"""sd_notify over a real AF_UNIX datagram socket: a path and an abstract '@' name."""
import os
import socket
import threading

import pytest

from gpufleet.controller.notify import Notifier, socket_address


def _listen(address):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(address)
    sock.settimeout(5)
    return sock


def test_messages_reach_a_path_socket(tmp_path):
    path = str(tmp_path / "notify")
    with _listen(path) as sock:
        notifier = Notifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "300000000"})
        assert notifier.enabled and notifier.watchdog_s == 300
        assert notifier.ready("holding the lease")
        assert sock.recv(4096) == b"READY=1\nSTATUS=holding the lease"
        assert notifier.watchdog("last pass ok\nsecond line")
        assert sock.recv(4096) == b"WATCHDOG=1\nSTATUS=last pass ok second line"


def test_messages_reach_an_abstract_socket():
    name = "gpufleet-test-%d" % os.getpid()
    with _listen("\0" + name) as sock:
        assert Notifier({"NOTIFY_SOCKET": "@" + name}).stopping("bye")
        assert sock.recv(4096) == b"STOPPING=1\nSTATUS=bye"


def test_without_systemd_nothing_is_sent_and_nothing_fails(tmp_path):
    assert not Notifier({}).ready("x")
    assert socket_address("vsock:2:1234") is None
    # a socket that went away: the send fails quietly, the controller goes on
    assert not Notifier({"NOTIFY_SOCKET": str(tmp_path / "gone")}).watchdog()


@pytest.mark.parametrize("usec", ["", "0", "abc"])
def test_no_watchdog_period_without_a_valid_watchdog_usec(usec):
    assert Notifier({"NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": usec}).watchdog_s is None


def test_keep_alive_pings_until_stopped(tmp_path):
    path = str(tmp_path / "notify")
    with _listen(path) as sock:
        stop = threading.Event()
        thread = Notifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "20000"}).keep_alive(stop)
        assert sock.recv(64) == b"WATCHDOG=1"
        stop.set()
        thread.join(5)
        assert not thread.is_alive()
