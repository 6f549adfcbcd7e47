"""An HTTPS file server on loopback for the machine node: install configs and signed images.

The guest reaches it at 10.0.2.2 (QEMU user networking). The certificate is the lab CA's, the
one the lab's installer ISO is built to trust. Requests are recorded so tests can tell what the
installer asked for (and what it never asked for).
"""
import functools
import http.server
import socket
import ssl
import threading

__all__ = ["free_port", "ArtifactServer"]


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        self.server.requests.append(self.path)


class ArtifactServer:
    """Serves ``folder`` over HTTPS on 127.0.0.1:``port`` until ``stop()``."""

    def __init__(self, folder, port, cert, key):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", port), functools.partial(_Handler, directory=str(folder)))
        self.server.requests = []
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def requests(self):
        return self.server.requests

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
