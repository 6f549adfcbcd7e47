"""systemd's notify protocol (sd_notify(3)): READY=1, WATCHDOG=1, STATUS=... to $NOTIFY_SOCKET.

Why not a library: python3-systemd (``systemd.daemon.notify``) builds against libsystemd's
headers, which a venv install on a host without libsystemd-dev cannot do; the protocol is one
datagram on an AF_UNIX socket, done here with the standard library.
"""
import os
import socket
import threading

__all__ = ["Notifier", "socket_address"]


def socket_address(value):
    """$NOTIFY_SOCKET -> the address for sendto: a path, or '@name' -> an abstract socket."""
    if not value or not (value.startswith("/") or value.startswith("@")):
        return None     # unset, or a vsock/other address this notifier does not speak
    return "\0" + value[1:] if value.startswith("@") else value


class Notifier:
    """Sends notify messages when systemd asked for them ($NOTIFY_SOCKET); else does nothing."""

    def __init__(self, environ=None):
        environ = os.environ if environ is None else environ
        self.address = socket_address(environ.get("NOTIFY_SOCKET"))
        usec = environ.get("WATCHDOG_USEC") or ""
        self.watchdog_s = int(usec) / 1e6 if usec.isdigit() and int(usec) > 0 else None
        self._lock = threading.Lock()

    @property
    def enabled(self):
        return self.address is not None

    def send(self, *lines):
        """One datagram of ``KEY=value`` lines; False when not under systemd or the send failed
        (a lost notification must never stop the controller)."""
        if self.address is None:
            return False
        data = "\n".join(line.replace("\n", " ") for line in lines).encode("utf-8")
        with self._lock, socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            try:
                sock.sendto(data, self.address)
            except OSError:
                return False
        return True

    def ready(self, status):
        return self.send("READY=1", "STATUS=" + status)

    def watchdog(self, status=None):
        return self.send(*(["WATCHDOG=1"] + (["STATUS=" + status] if status else [])))

    def stopping(self, status):
        return self.send("STOPPING=1", "STATUS=" + status)

    def keep_alive(self, stop_event):
        """Ping the watchdog every half period until ``stop_event`` is set (a daemon thread): the
        shutdown drain waits for running playbooks, bounded by their timeout and TimeoutStopSec=."""
        if self.address is None or self.watchdog_s is None:
            return None

        def ping():
            while not stop_event.wait(self.watchdog_s / 2):
                self.send("WATCHDOG=1")
        thread = threading.Thread(target=ping, daemon=True, name="gpufleet-watchdog")
        thread.start()
        return thread
