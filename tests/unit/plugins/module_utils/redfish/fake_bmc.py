"""A fake Redfish transport for unit tests: serves JSON trees, records requests, no sockets.

A "tree" maps a path (``/redfish/v1/Systems/1``) to a resource. Tests add handlers for
(method, path) that return a Response, a list of Responses (served in order), or raise
TransportError; everything else is served from the tree (GET) or answered 204.
"""
import json
import os

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.client import (
    RedfishClient, Response, RetryPolicy,
)
from tests.helpers import shared_fixture

HERE = os.path.dirname(os.path.abspath(__file__))


def load_tree(vendor):
    with open(os.path.join(HERE, "fixtures", vendor, "tree.json")) as handle:
        return json.load(handle)


def load_mockup(name):
    """A DMTF mockup folder (../shared/fixtures/redfish-mockups/<name>) as a tree."""
    base = shared_fixture("redfish-mockups", name)
    tree = {}
    for folder, _dirs, files in os.walk(base):
        if "index.json" not in files:
            continue
        rel = os.path.relpath(folder, base)
        path = "/redfish/v1" + ("" if rel == "." else "/" + rel)
        with open(os.path.join(folder, "index.json")) as handle:
            tree[path] = json.load(handle)
    tree["/redfish/v1/"] = tree["/redfish/v1"]
    return tree


def ok(body=None, status=200, headers=None):
    return Response(status, headers or {}, json.dumps(body).encode() if body is not None else b"")


class FakeTransport:
    def __init__(self, tree=None):
        self.tree = dict(tree or {})
        self.handlers = {}
        self.sent = []
        self.closed = False

    def on(self, method, path, answer):
        self.handlers[(method, path)] = answer
        return self

    def send(self, method, url, headers, body, timeout, auth=None):
        path = "/" + url.split("://", 1)[1].split("/", 1)[1]
        self.sent.append(dict(method=method, path=path, headers=dict(headers),
                              body=json.loads(body) if body else None, auth=auth))
        answer = self.handlers.get((method, path))
        if isinstance(answer, list):
            answer = answer.pop(0) if len(answer) > 1 else answer[0]
        if callable(answer):
            answer = answer(self.sent[-1])
        if isinstance(answer, Exception):
            raise answer
        if answer is not None:
            return answer
        if method == "GET":
            key = path.split("?", 1)[0]
            if key in self.tree:
                return ok(self.tree[key])
            return ok({"error": {"code": "Base.1.8.ResourceMissingAtURI",
                                 "message": "%s not found" % key}}, 404)
        if method == "POST" and path.endswith("/SessionService/Sessions"):
            return ok({"error": {"message": "no sessions"}}, 404)
        return ok(None, 204)

    def close(self):
        self.closed = True

    def calls(self, method=None, path=None):
        return [s for s in self.sent if (method is None or s["method"] == method)
                and (path is None or s["path"] == path)]


class Clock:
    """Fake time: sleep advances it; records every sleep."""

    def __init__(self):
        self.now = 0.0
        self.sleeps = []

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds

    def __call__(self):
        return self.now


def make_client(transport, clock=None, **kwargs):
    clock = clock or Clock()
    kwargs.setdefault("auth", "basic")
    return RedfishClient("bmc-1.example.net", "admin", "s3cret-pw", node="node-1",
                         transport=transport, sleep=clock.sleep, clock=clock,
                         retry=kwargs.pop("retry", RetryPolicy(retries=3, backoff=0.5)), **kwargs)


__all__ = ["FakeTransport", "Clock", "make_client", "load_tree", "load_mockup", "ok"]
