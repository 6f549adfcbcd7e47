"""An HTTP proxy in front of an emulated BMC that injects faults on chosen requests.

Rules are ``(method, path regex, action, times)``; actions:
``503`` and ``429`` (with Retry-After: 1), ``slow`` (wait 3 s, then forward), ``reset`` (close the TCP
connection with RST, no answer), ``401`` (only for requests carrying X-Auth-Token, so a
session dies mid-run), ``badjson`` (200 with a truncated JSON body), ``lost`` (forward to
the BMC, so the request takes effect, then reset the connection: the answer is lost),
``late`` (forward, then wait 3 s before answering: a read timeout after the request took
effect), ``redirect`` (307 back to the same path: a redirect loop).
``forwarded(method, pattern)`` counts the requests that reached the BMC.
"""
import re
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import requests

PASS_HEADERS = ("Content-Type", "X-Auth-Token", "Location", "ETag", "Retry-After")


class FaultProxy:
    def __init__(self, address, upstream, ca):
        self.upstream = upstream.rstrip("/")
        self.ca = ca
        self.rules = []
        self.log = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer((address, 0), self._handler())
        self.server.daemon_threads = True
        self.base = "http://%s:%d" % (address, self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def set_rules(self, *rules):
        with self.lock:
            self.rules = [[m, re.compile(p), a, n] for m, p, a, n in rules]
            self.log = []

    def faults(self):
        return [entry for entry in self.log if entry[2] != "forward"]

    def forwarded(self, method, pattern):
        """How many ``method`` requests matching ``pattern`` reached the BMC."""
        regex = re.compile(pattern)
        return sum(1 for m, path, action in self.log if m == method and regex.search(path)
                   and action in ("forward", "slow", "lost", "late"))

    def _take(self, method, path, has_token):
        with self.lock:
            for rule in self.rules:
                r_method, pattern, action, left = rule
                if left > 0 and r_method == method and pattern.search(path):
                    if action == "401" and not has_token:
                        continue
                    rule[3] -= 1
                    return action
        return "forward"

    def _handler(self):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _any(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                action = proxy._take(self.command, self.path, "X-Auth-Token" in self.headers)
                proxy.log.append((self.command, self.path, action))
                if action == "reset":
                    return self._reset()
                if action == "redirect":
                    return self._reply(307, b"", {"Location": self.path})
                if action == "503":
                    return self._reply(503, b'{"error": {"message": "busy"}}', {"Retry-After": "1"})
                if action == "429":
                    return self._reply(429, b'{"error": {"message": "too many requests"}}',
                                       {"Retry-After": "1"})
                if action == "401":
                    return self._reply(401, b'{"error": {"message": "session expired"}}', {})
                if action == "badjson":
                    return self._reply(200, b'{"Id": "1", "PowerState": ', {})
                if action == "slow":
                    time.sleep(3)
                self._forward(body, action)

            def _reset(self):
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()

            def _forward(self, body, action="forward"):
                headers = dict((k, v) for k, v in self.headers.items()
                               if k.lower() not in ("host", "content-length", "connection"))
                try:
                    rsp = requests.request(self.command, proxy.upstream + self.path, data=body,
                                           headers=headers, verify=proxy.ca, timeout=30,
                                           allow_redirects=False)
                except (requests.RequestException, ConnectionError):
                    return  # the client gave up (slow case); nothing to answer
                if action == "lost":
                    return self._reset()
                if action == "late":
                    time.sleep(3)
                extra = dict((k, rsp.headers[k]) for k in PASS_HEADERS if k in rsp.headers)
                self._reply(rsp.status_code, rsp.content, extra)

            def _reply(self, status, data, headers):
                try:
                    self.send_response(status)
                    headers.setdefault("Content-Type", "application/json")
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_PATCH = do_DELETE = _any

        return Handler

    def stop(self):
        self.server.shutdown()


def rack_proxy(lab, address):
    """A FaultProxy on ``address`` in front of the first rack of a lab_fixture.Lab."""
    rack = lab.cfg["racks"][0]
    return FaultProxy(address, "https://%s:%d" % (rack["address"], rack["port"]), lab.ca)
