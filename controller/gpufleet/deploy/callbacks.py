"""The controller's end of an install: each node's order served once, its callbacks received.

``InstallBook`` is the logic (plain Python, tests call it directly):
- ``expect(node, system_uuid, order)`` registers an install: the order is served to the first
  request for ``<uuid>.json`` and then no more (a second fetch gets 410: the token has been
  handed out once, as Ironic's agent token is);
- ``receive(node, authorization, body)`` accepts a callback whose Bearer token matches the
  node's (compared as SHA-256 digests in constant time; the token itself is not kept), checks
  the event, records it, and consumes the token with the final event (``imaged`` or
  ``failed``): nothing can report for that install afterwards.

``DeployService`` serves the book over HTTPS with the standard library's http.server: the
controller already depends on nothing else for this, and the agent side is stdlib-only too.
"""
import hashlib
import hmac
import http.server
import json
import ssl
import threading
import time

from gpufleet.deploy.errors import DeployError
from gpufleet.deploy.orders import canonical_uuid

__all__ = ["InstallBook", "DeployService", "FINAL_STATES"]

FINAL_STATES = ("imaged", "failed")
_STATES = ("running",) + FINAL_STATES
_MAX_BODY = 64 * 1024


def _digest(token):
    return hashlib.sha256(token.encode("utf-8")).digest()


class InstallBook:
    """Installs under way, by node: their order (until fetched), token digest and events."""

    def __init__(self, clock=time.time, on_event=None):
        self._lock = threading.Lock()
        self._by_node, self._by_uuid = {}, {}
        self.clock = clock
        self.on_event = on_event      # optional callable(node, event): e.g. a ledger note

    def expect(self, node, system_uuid, order):
        token = order["callback"]["token"]
        key = canonical_uuid(system_uuid)
        with self._lock:
            old = self._by_node.get(node)
            if old:
                self._by_uuid.pop(old["uuid"], None)
            self._by_node[node] = {"uuid": key, "order": order, "digest": _digest(token), "events": [],
                                   "final": None, "fetched": False}
            self._by_uuid[key] = node

    def order_for(self, system_uuid):
        """-> (status, body bytes or message): the order once, 410 after, 404 unknown."""
        try:
            key = canonical_uuid(system_uuid)
        except DeployError:     # a malformed name is simply not an order
            return 404, "no such order"
        with self._lock:
            node = self._by_uuid.get(key)
            entry = self._by_node.get(node) if node else None
            if entry is None:
                return 404, "no such order"
            if entry["fetched"]:
                return 410, "the order of %s was already fetched; re-run the install to issue a new one" % node
            entry["fetched"] = True
            body = json.dumps(entry.pop("order"), sort_keys=True).encode("utf-8")
            return 200, body

    def receive(self, node, authorization, body):
        """-> (status, message). 401/403 refuse, 400 for a bad event, 200 recorded."""
        with self._lock:
            entry = self._by_node.get(node)
            if entry is None or entry["final"]:
                return 403, "no install of %s is waiting for callbacks" % node
            scheme, _, token = (authorization or "").partition(" ")
            if scheme != "Bearer" or not token or not hmac.compare_digest(_digest(token.strip()), entry["digest"]):
                return 401, "bad or missing Bearer token"
            try:
                event = json.loads(body.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                return 400, "the body is not JSON"
            if not isinstance(event, dict) or event.get("node") != node or event.get("state") not in _STATES \
                    or not isinstance(event.get("step"), str):
                return 400, "an event needs node (%s), state (one of %s) and step" % (node, ", ".join(_STATES))
            event = dict(event, received_at=self.clock())
            entry["events"].append(event)
            if event["state"] in FINAL_STATES:
                entry["final"] = event["state"]
                entry["digest"] = b""          # one-time: nothing reports for this install again
        if self.on_event:
            self.on_event(node, event)
        return 200, "recorded"

    def events(self, node):
        with self._lock:
            return list((self._by_node.get(node) or {}).get("events", ()))

    def outcome(self, node):
        """'imaged', 'failed' or None (still running, or unknown)."""
        with self._lock:
            return (self._by_node.get(node) or {}).get("final")


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):   # the default prints request lines to stderr; nothing secret, but noisy
        pass

    def _answer(self, status, body, content_type="text/plain"):
        data = body if isinstance(body, bytes) else (body + "\n").encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        parts = self.path.strip("/").split("/")
        if len(parts) == 2 and parts[0] == "orders" and parts[1].endswith(".json"):
            status, body = self.server.book.order_for(parts[1][:-len(".json")])
            return self._answer(status, body, "application/json" if status == 200 else "text/plain")
        return self._answer(404, "not found")

    def do_POST(self):
        parts = self.path.strip("/").split("/")
        if len(parts) != 4 or parts[:2] != ["v1", "nodes"] or parts[3] != "events":
            return self._answer(404, "not found")
        length = int(self.headers.get("Content-Length") or 0)
        if length <= 0 or length > _MAX_BODY:
            return self._answer(400, "a body of 1 to %d bytes is needed" % _MAX_BODY)
        status, message = self.server.book.receive(parts[2], self.headers.get("Authorization"),
                                                   self.rfile.read(length))
        return self._answer(status, message)


class DeployService:
    """HTTPS on ``address``:``port``: GET /orders/<uuid>.json, POST /v1/nodes/<node>/events."""

    def __init__(self, book, address, port, certfile, keyfile):
        self.server = http.server.ThreadingHTTPServer((address, port), _Handler)
        self.server.book = book
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(certfile, keyfile)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def callback_url(self, host, node):
        return "https://%s:%d/v1/nodes/%s/events" % (host, self.port, node)

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
