"""The controller's end of an install: each node's order served once, its callbacks received.

``InstallBook`` is the logic (plain Python, tests call it directly), kept in a state directory
(mode 0700) so that the process that writes an order (``gpufleet deploy order``, a bring-up),
the service that serves it and records callbacks (``gpufleet deploy serve``) and a reader
(``gpufleet deploy wait``) can be different processes, and a service restart loses nothing::

    orders/<uuid>.json        the order (mode 0600, it holds the token); removed when served
    served/<uuid>.json        the served-once marker: node, install (run) id, when
    nodes/<node>.json         the node's current install: uuid, run id, the token's SHA-256
    final/<run>               the install's final event was accepted (its token is consumed)
    events/<node>.jsonl       the current install's events, one JSON line each
    events/<node>.<run>.jsonl earlier installs' events, kept as history

- ``expect(node, system_uuid, order)`` starts an install: a new run id and token digest for the
  node (the old token is refused from then on), the old event stream moved aside, the order
  written. The token itself is only ever in the order file.
- ``order_for(uuid)`` serves the order to the first request and then no more (410 after: the
  token has been handed out once, as Ironic's agent token is), 404 for an unknown machine.
- ``receive(node, authorization, body)`` accepts a callback whose Bearer token matches the
  node's (compared as SHA-256 digests in constant time), checks the event, appends it, and
  consumes the token with the final event (``imaged`` or ``failed``).

Why no lock is needed across processes: every change is one atomic step of the file system.
Files are replaced whole by rename (readers see the old or the new one); the order is claimed
by renaming it away (one request wins); the final event is claimed by creating ``final/<run>``
with O_EXCL (one wins); events are appended with one O_APPEND write each (lines never
interleave). Each event line carries its run id and readers keep only the current run's, so
an event checked against an install that is replaced a moment later never counts for the new
one. One writer of orders per node at a time is assumed (a bring-up owns its node).

``DeployService`` serves the book over HTTPS with the standard library's http.server: the
controller already depends on nothing else for this, and the agent side is stdlib-only too.
"""
import datetime
import errno
import hashlib
import hmac
import http.server
import json
import os
import re
import secrets
import ssl
import stat
import sys
import threading
import time

from gpufleet.deploy.errors import DeployError
from gpufleet.deploy.orders import canonical_uuid, write_order, write_private

__all__ = ["InstallBook", "DeployService", "FINAL_STATES", "open_state_dir"]

FINAL_STATES = ("imaged", "failed")
_STATES = ("running",) + FINAL_STATES
_MAX_BODY = 64 * 1024
_FOLDERS = ("orders", "served", "nodes", "final", "events")
_NODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")


def _digest(token):
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _read_json(path):
    """The parsed file, or None when it does not exist."""
    try:
        with open(path, "rb") as handle:
            return json.loads(handle.read().decode("utf-8"))
    except FileNotFoundError:
        return None


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def open_state_dir(path):
    """Create (0700) or check the state directory; one readable by others is refused, not changed."""
    path = os.path.abspath(path)
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        mode = stat.S_IMODE(os.stat(path).st_mode)
        if mode & 0o077:
            raise DeployError("state", "state directory %s has mode %o: others can read install tokens; "
                              "fix: chmod 700 %s" % (path, mode, path), field="state_dir")
        for name in _FOLDERS:
            os.makedirs(os.path.join(path, name), mode=0o700, exist_ok=True)
    except OSError as exc:
        raise DeployError("state", "cannot use state directory %s (%s); fix: pass --state-dir with a "
                          "directory this user can create and write" % (path, exc.strerror or exc),
                          field="state_dir")
    return path


def check_node_name(node):
    if not isinstance(node, str) or not _NODE.match(node):
        raise DeployError("order", "node name %r is not usable as a file name; fix: letters, digits, "
                          "'.', '_' and '-', starting with a letter or digit" % (node,), field="node")
    return node


class InstallBook:
    """Installs by node, in a state directory: order (until served), token digest, events."""

    def __init__(self, state_dir, clock=time.time, on_event=None):
        self.root = open_state_dir(state_dir)
        self.clock = clock
        self.on_event = on_event      # optional callable(node, event): e.g. a ledger note

    def _path(self, folder, name):
        return os.path.join(self.root, folder, name)

    def record(self, node):
        """The node's current install ({node, uuid, run, token_sha256, ordered_at}) or None."""
        if not isinstance(node, str) or not _NODE.match(node):
            return None
        return _read_json(self._path("nodes", node + ".json"))

    def expect(self, node, system_uuid, order):
        """Start an install of ``node``: -> the order file's path."""
        check_node_name(node)
        key = canonical_uuid(system_uuid)
        if order.get("node") != node:
            raise DeployError("order", "the order names node %r, not %s; fix: build it for %s"
                              % (order.get("node"), node, node), field="node")
        other = _read_json(self._path("orders", key + ".json"))
        if other and other.get("node") != node:
            raise DeployError("order", "machine %s already has an unserved order for %s; fix: check --uuid "
                              "(one machine is one node)" % (key, other.get("node")), field="uuid")
        old = self.record(node)
        run = "%s-%s" % (datetime.datetime.fromtimestamp(self.clock(), datetime.timezone.utc)
                         .strftime("%Y%m%dT%H%M%SZ"), secrets.token_hex(4))
        # the record first: from here on the old token is refused and an old order is stale
        write_private(self._path("nodes", node + ".json"), json.dumps({
            "node": node, "uuid": key, "run": run, "token_sha256": _digest(order["callback"]["token"]),
            "ordered_at": self.clock()}, sort_keys=True).encode("utf-8"))
        current = self._path("events", node + ".jsonl")
        if old and os.path.exists(current):
            os.replace(current, self._path("events", "%s.%s.jsonl" % (node, old["run"])))
        if old and old.get("uuid") != key:
            _unlink(self._path("orders", old["uuid"] + ".json"))
        _unlink(self._path("served", key + ".json"))
        for name in os.listdir(os.path.join(self.root, "orders")):   # a serve that died mid-way
            if name.startswith(".serving-%s-" % key):
                _unlink(self._path("orders", name))
        return write_order(os.path.join(self.root, "orders"), key, order)

    def order_for(self, system_uuid):
        """-> (status, body bytes or message): the order once, 410 after, 404 unknown."""
        try:
            key = canonical_uuid(system_uuid)
        except DeployError:     # a malformed name is simply not an order
            return 404, "no such order"
        path = self._path("orders", key + ".json")
        claimed = self._path("orders", ".serving-%s-%s" % (key, secrets.token_hex(8)))
        try:
            os.rename(path, claimed)            # one request wins the order
        except FileNotFoundError:
            return self._not_servable(key)
        try:
            with open(claimed, "rb") as handle:
                body = handle.read()
            try:
                order = json.loads(body.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                return 404, "no such order (the file was not an order)"
            record = self.record(order.get("node")) if isinstance(order, dict) else None
            token = (order.get("callback") or {}).get("token") if record else None
            if not record or record.get("uuid") != key or not isinstance(token, str) or not hmac.compare_digest(
                    _digest(token), record.get("token_sha256", "")):
                return 404, "no such order (it was replaced)"
            # the marker before the claim goes, so a concurrent request always sees one of them
            write_private(self._path("served", key + ".json"), json.dumps({
                "node": record["node"], "run": record["run"], "served_at": self.clock()}, sort_keys=True).encode())
            return 200, body
        finally:
            _unlink(claimed)                     # the token leaves the disk once handed out

    def _not_servable(self, key):
        # the claim file first, then the marker: the winner writes the marker before it removes
        # its claim, so a request that lost the race finds one or the other and gets 410
        prefix = ".serving-%s-" % key
        if any(name.startswith(prefix) for name in os.listdir(os.path.join(self.root, "orders"))):
            return 410, "the order of this machine is being fetched; re-run the install to issue a new one"
        served = _read_json(self._path("served", key + ".json"))
        if served:
            return 410, ("the order of %s was already fetched; re-run the install to issue a new one"
                         % served.get("node"))
        return 404, "no such order"

    def served(self, node):
        """True once the node's current order has been fetched."""
        record = self.record(node)
        marker = _read_json(self._path("served", record["uuid"] + ".json")) if record else None
        return bool(marker and marker.get("run") == record["run"])

    def receive(self, node, authorization, body):
        """-> (status, message). 401/403 refuse, 400 for a bad event, 200 recorded."""
        record = self.record(node)
        if record is None or os.path.exists(self._path("final", record["run"])):
            return 403, "no install of %s is waiting for callbacks" % node
        scheme, _, token = (authorization or "").partition(" ")
        if scheme != "Bearer" or not token.strip() or not hmac.compare_digest(
                _digest(token.strip()), record["token_sha256"]):
            return 401, "bad or missing Bearer token"
        try:
            event = json.loads(body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return 400, "the body is not JSON"
        if not isinstance(event, dict) or event.get("node") != node or event.get("state") not in _STATES \
                or not isinstance(event.get("step"), str):
            return 400, "an event needs node (%s), state (one of %s) and step" % (node, ", ".join(_STATES))
        if event["state"] in FINAL_STATES:
            try:   # one-time: the first final event consumes the token, for every process
                os.close(os.open(self._path("final", record["run"]), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            except FileExistsError:
                return 403, "no install of %s is waiting for callbacks" % node
        event = dict(event, run=record["run"], received_at=self.clock())
        line = (json.dumps(event, sort_keys=True) + "\n").encode("utf-8")
        fd = os.open(self._path("events", node + ".jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        if self.on_event:
            self.on_event(node, event)
        return 200, "recorded"

    def events(self, node):
        """The current install's events, oldest first (a torn last line is not yet an event)."""
        record = self.record(node)
        if record is None:
            return []
        try:
            with open(self._path("events", node + ".jsonl"), "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            return []
        found = []
        for line in data.split(b"\n")[:-1]:
            try:
                event = json.loads(line.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                continue
            if isinstance(event, dict) and event.get("run") == record["run"]:
                found.append(event)
        return found

    def outcome(self, node):
        """'imaged', 'failed' or None (still running, or unknown)."""
        finals = [e["state"] for e in self.events(node) if e.get("state") in FINAL_STATES]
        return finals[0] if finals else None


def _printable(text, limit=200):
    """A request path for a log line: no query string (never a secret in the log), escaped."""
    return text.split("?", 1)[0][:limit].encode("unicode_escape").decode("ascii")


class _Handler(http.server.BaseHTTPRequestHandler):
    timeout = 30          # a client that stalls mid-request frees its thread

    def log_message(self, *args):   # one line per request is written by _answer instead
        pass

    def _answer(self, status, body, content_type="text/plain", note=""):
        data = body if isinstance(body, bytes) else (body + "\n").encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        message = note or ("" if isinstance(body, bytes) else body)
        self.server.log("%s %s %s %d%s" % (self.client_address[0], self.command, _printable(self.path), status,
                                           (" " + message) if message else ""))

    def do_GET(self):
        parts = self.path.strip("/").split("/")
        if len(parts) == 2 and parts[0] == "orders" and parts[1].endswith(".json"):
            status, body = self.server.book.order_for(parts[1][:-len(".json")])
            return self._answer(status, body, "application/json" if status == 200 else "text/plain",
                                "order served" if status == 200 else "")
        return self._answer(404, "not found")

    def do_POST(self):
        parts = self.path.strip("/").split("/")
        if len(parts) != 4 or parts[:2] != ["v1", "nodes"] or parts[3] != "events":
            return self._answer(404, "not found")
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = 0
        if length <= 0 or length > _MAX_BODY:
            return self._answer(400, "a body of 1 to %d bytes is needed" % _MAX_BODY)
        body = self.rfile.read(length)
        status, message = self.server.book.receive(parts[2], self.headers.get("Authorization"), body)
        if status == 200:
            event = json.loads(body.decode("utf-8"))
            message = "%s %s %s" % (message, event["state"], event["step"])
        return self._answer(status, message)


class _TLSServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def finish_request(self, request, client_address):
        # the TLS handshake runs here, in the request's own thread: a client that connects and
        # stalls holds up only itself, not the accept loop
        request.settimeout(_Handler.timeout)
        try:
            tls = self.context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as exc:
            self.log("%s TLS handshake failed (%s)" % (client_address[0], getattr(exc, "reason", None) or exc))
            return
        try:
            self.RequestHandlerClass(tls, client_address, self)
        finally:
            self.shutdown_request(tls)


def _stderr_line(line):
    print("gpufleet-deploy %s %s" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), line),
          file=sys.stderr, flush=True)


class DeployService:
    """HTTPS on ``address``:``port``: GET /orders/<uuid>.json, POST /v1/nodes/<node>/events.

    ``log(line)`` gets one line per request (client, method, path, status, what happened); no
    header and no body is logged, so no token is."""

    def __init__(self, book, address, port, certfile, keyfile, log=None):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(certfile, keyfile)
        except (OSError, ssl.SSLError) as exc:
            raise DeployError("serve", "cannot load the certificate %s and key %s (%s); fix: pass a PEM "
                              "certificate and its private key" % (certfile, keyfile, exc), field="cert")
        try:
            self.server = _TLSServer((address, port), _Handler)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise DeployError("serve", "%s:%d is in use; fix: stop the other service or pass --port"
                                  % (address, port), field="port")
            raise DeployError("serve", "cannot listen on %s:%d (%s); fix: check --address and --port"
                              % (address, port, exc.strerror or exc), field="address")
        self.server.context = context
        self.server.book = book
        self.server.log = log or _stderr_line
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
