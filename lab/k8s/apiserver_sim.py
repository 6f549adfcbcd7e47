#!/usr/bin/env python3
"""LAB SIMULATION of the slice of the Kubernetes API that gpufleet's roles use. NOT Kubernetes.

No Kubernetes control plane can run on the CI machine (no image registry; Debian ships no
kube-apiserver), so the Molecule scenarios of node_labels, cluster_join and node_drain
(``*_scheduler: kubernetes``) run kubernetes.core against this stand-in. It answers only what
those modules and ``lab/k8s/kubeadm_sim`` send, over HTTPS with bearer tokens, so the modules
keep ``validate_certs`` on:

- discovery: ``/version``, ``/api``, ``/api/v1``, ``/apis``; ``/healthz``, ``/readyz``, ``/livez``
- core/v1 Nodes: get, list, create, patch (strategic merge, merge, JSON patch; ``dryRun=All``)
- core/v1 Pods: list (all namespaces or one; ``fieldSelector``, ``labelSelector``), get, create,
  delete (graceful), and the policy/v1 ``eviction`` subresource (a pod annotation
  ``sim.gpufleet.io/refuse-evictions: "N"`` makes the first N evictions answer 429 as a
  PodDisruptionBudget would)
- Namespaces (get, list) and ConfigMap ``kube-public/cluster-info`` (anonymous, JWS-signed per
  bootstrap token, as kubeadm's token discovery reads it)
- ``/sim/requests`` (admin): every request seen, for tests; also appended to ``--log``.

Every request is logged (method, path, query, content type, user, status, JSON body, the
resourceVersion of the object answered), never
the Authorization header. Never used by production code; see docs/roles-kubernetes.md.
Usage: apiserver_sim.py --cert C --key K --ca CA --token-file T [--bootstrap-token id.secret | --bootstrap-token-file F]
       [--listen 0.0.0.0:6443] [--advertise https://k8s-api:6443] [--log FILE]
"""
import argparse
import base64
import hashlib
import hmac
import json
import os
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


try:  # as lab.k8s on the controller (tests)
    from lab.k8s.sim_store import ApiError, Store
except ImportError:  # as a script in the simulation container: only this folder is mounted there
    from sim_store import ApiError, Store

__all__ = ["SimState", "make_server", "main", "VERSION"]

VERSION = {"major": "1", "minor": "31", "gitVersion": "v1.31.0+gpufleet-lab-sim", "platform": "linux/amd64",
           "goVersion": "none (Python lab simulation)", "compiler": "none", "buildDate": "1970-01-01T00:00:00Z",
           "gitCommit": "lab-simulation", "gitTreeState": "clean"}
_VERBS_RW = ["create", "delete", "get", "list", "patch"]
_RESOURCES = [
    {"name": "configmaps", "singularName": "configmap", "namespaced": True, "kind": "ConfigMap", "verbs": ["get"]},
    {"name": "namespaces", "singularName": "namespace", "namespaced": False, "kind": "Namespace",
     "verbs": ["get", "list"]},
    {"name": "nodes", "singularName": "node", "namespaced": False, "kind": "Node",
     "verbs": ["create", "get", "list", "patch"], "shortNames": ["no"]},
    {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod", "verbs": _VERBS_RW,
     "shortNames": ["po"]},
    {"name": "pods/eviction", "singularName": "", "namespaced": True, "group": "policy", "version": "v1",
     "kind": "Eviction", "verbs": ["create"]},
]
_PUBLIC = ("/version", "/healthz", "/readyz", "/livez", "/api/v1/namespaces/kube-public/configmaps/cluster-info")


def _b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def detached_jws(payload, token_id, token_secret):
    """HS256 JWS with a detached payload, keyed by the bootstrap token (kubeadm token discovery)."""
    header = _b64url(json.dumps({"alg": "HS256", "kid": token_id}, separators=(",", ":")).encode())
    signing_input = ("%s.%s" % (header, _b64url(payload.encode()))).encode()
    return "%s..%s" % (header, _b64url(hmac.new(token_secret.encode(), signing_input, hashlib.sha256).digest()))


class SimState:
    """Store + tokens + request log, shared by the handler threads under one lock."""

    def __init__(self, admin_tokens, bootstrap_tokens=(), ca_pem="", advertise="https://k8s-api:6443",
                 termination_seconds=2.0, log_path=None):
        self.lock = threading.Lock()
        self.store = Store(termination_seconds=termination_seconds)
        self.admin_tokens = set(admin_tokens)
        self.bootstrap = dict(t.split(".", 1) for t in bootstrap_tokens)
        self.requests = []
        self.log_path = log_path
        self._publish_cluster_info(ca_pem, advertise)

    def _publish_cluster_info(self, ca_pem, advertise):
        kubeconfig = json.dumps({"apiVersion": "v1", "kind": "Config", "clusters": [{"name": "", "cluster": {
            "server": advertise, "certificate-authority-data": base64.b64encode(ca_pem.encode()).decode()}}],
            "contexts": [], "current-context": "", "preferences": {}, "users": []}, indent=2)
        data = {"kubeconfig": kubeconfig}
        for token_id, secret in self.bootstrap.items():
            data["jws-kubeconfig-" + token_id] = detached_jws(kubeconfig, token_id, secret)
        self.store.create("configmaps", "kube-public", {"metadata": {"name": "cluster-info"}, "data": data})

    def user(self, authorization):
        if not authorization or not authorization.startswith("Bearer "):
            return "system:anonymous"
        token = authorization[len("Bearer "):].strip()
        if token in self.admin_tokens:
            return "kubernetes-admin"
        token_id, _, secret = token.partition(".")
        if token_id in self.bootstrap and hmac.compare_digest(self.bootstrap[token_id], secret):
            return "system:bootstrap:" + token_id
        return None

    def record(self, entry):
        with self.lock:
            self.requests.append(entry)
        if self.log_path:
            with open(self.log_path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry, sort_keys=True) + "\n")


def _forbidden(user, verb, resource):
    return ApiError(403, "Forbidden", '%s is forbidden: User "%s" cannot %s resource "%s" in API group "" '
                                      '(lab simulation RBAC)' % (resource, user, verb, resource))


def authorize(user, method, parts):
    """Anonymous: public paths. Bootstrap tokens: discovery, create a Node, read Nodes. Admin: all."""
    if user == "kubernetes-admin":
        return
    if user is None:
        raise ApiError(401, "Unauthorized", "Unauthorized")
    if user.startswith("system:bootstrap:"):
        if method == "GET" and len(parts) <= 2:
            return
        if parts[2:3] == ["nodes"] and method in ("GET", "POST"):
            return
    raise _forbidden(user, method.lower(), parts[2] if len(parts) > 2 else "/")


def route(state, method, parts, query, body, content_type):
    """Dispatch /api/v1/... (parts = path split on /, without the leading empty one)."""
    store, dry_run = state.store, query.get("dryRun") == "All"
    store.warnings = []
    rest = parts[2:]
    if query.get("watch") in ("true", "1"):
        raise ApiError(405, "MethodNotAllowed", "watch is not implemented by the lab simulation")
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        namespace, resource, name = rest[1], rest[2], (rest[3] if len(rest) > 3 else None)
        if len(rest) == 5 and resource == "pods" and rest[4] == "eviction" and method == "POST":
            return 201, store.evict(namespace, name, body, dry_run=dry_run)
        if len(rest) > 4 or store.kind_of(resource) in ("Node", "Namespace"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
    elif len(rest) in (1, 2):
        namespace, resource, name = None, rest[0], (rest[1] if len(rest) == 2 else None)
        if name is not None and store.kind_of(resource) not in ("Node", "Namespace"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
    else:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    return _object_call(store, method, (resource, namespace, name), query, body, content_type, dry_run)


def _object_call(store, method, target, query, body, content_type, dry_run):
    resource, namespace, name = target
    strict = query.get("fieldValidation") == "Strict"
    namespaced = store.kind_of(resource) in ("Pod", "ConfigMap")
    if name is None and method == "GET":
        return 200, store.list(resource, namespace if namespaced else None, query.get("fieldSelector", ""),
                               query.get("labelSelector", ""))
    if name is None and method == "POST":
        return 201, store.create(resource, namespace, body, dry_run=dry_run, strict=strict)
    if name is not None and method == "GET":
        return 200, store.get(resource, namespace, name)
    if name is not None and method == "PATCH" and resource in ("nodes", "pods"):
        return 200, store.patch(resource, namespace, name, body, content_type, dry_run=dry_run, strict=strict)
    if name is not None and method == "DELETE" and resource == "pods":
        grace = (body or {}).get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
        return 200, store.delete(namespace, name, None if grace is None else int(grace), dry_run=dry_run)
    raise ApiError(405, "MethodNotAllowed", "the lab simulation does not implement %s on %s" % (method, resource))


def discovery(path):
    if path == "/version":
        return VERSION
    if path in ("/healthz", "/readyz", "/livez"):
        return "ok"
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "k8s-api:6443"}]}
    if path == "/api/v1":
        return {"kind": "APIResourceList", "groupVersion": "v1", "resources": _RESOURCES}
    if path == "/apis":
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "gpufleet-lab-k8s-apiserver-sim"
    state = None  # set by make_server

    def log_message(self, format, *args):  # noqa: A002  (signature of BaseHTTPRequestHandler)
        pass  # every request goes to the structured log instead

    def _send(self, code, payload, warnings=()):
        text = payload if isinstance(payload, str) else json.dumps(payload)
        data = text.encode()
        self.send_response(code)
        for warning in warnings:
            self.send_header("Warning", '299 - "%s"' % warning.replace('"', "'"))
        self.send_header("Content-Type", "text/plain" if isinstance(payload, str) else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise ApiError(400, "BadRequest", "the request body is not JSON: %s" % exc) from exc

    def _handle(self, method):
        url = urlsplit(self.path)
        path = url.path.rstrip("/") or "/"
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        content_type = self.headers.get("Content-Type", "")
        entry = {"time": time.time(), "method": method, "path": path, "query": query,
                 "content_type": content_type, "user": None, "body": None}
        try:
            entry["body"] = body = self._body()
            user = entry["user"] = self.state.user(self.headers.get("Authorization"))
            if path not in _PUBLIC:
                authorize(user, method, path.strip("/").split("/"))
            code, payload, warnings = self._dispatch(method, path, query, body, content_type)
        except ApiError as exc:
            code, payload, warnings = exc.code, exc.status(), []
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            code, payload, warnings = 400, ApiError(400, "BadRequest", "malformed request: %r" % (exc,)).status(), []
        entry["status"] = code
        if warnings:
            entry["warnings"] = warnings
        if isinstance(payload, dict) and isinstance(payload.get("metadata"), dict):
            entry["resourceVersion"] = payload["metadata"].get("resourceVersion")
        self.state.record(entry)
        self._send(code, payload, warnings)

    def _dispatch(self, method, path, query, body, content_type):
        if method == "GET":
            doc = discovery(path)
            if doc is not None:
                return 200, doc, []
            if path == "/sim/requests":
                with self.state.lock:
                    return 200, {"kind": "SimRequestLog", "items": list(self.state.requests)}, []
        if not path.startswith("/api/v1/"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource (lab simulation)")
        with self.state.lock:
            code, payload = route(self.state, method, path.strip("/").split("/"), query, body, content_type)
            warnings, self.state.store.warnings = self.state.store.warnings, []
        return code, payload, warnings

    def do_GET(self):  # noqa: N802
        self._handle("GET")

    def do_POST(self):  # noqa: N802
        self._handle("POST")

    def do_PATCH(self):  # noqa: N802
        self._handle("PATCH")

    def do_DELETE(self):  # noqa: N802
        self._handle("DELETE")

    def do_PUT(self):  # noqa: N802
        self._handle("PUT")


def make_server(state, listen, cert, key):
    host, _, port = listen.rpartition(":")
    handler = type("SimHandler", (Handler,), {"state": state})
    server = ThreadingHTTPServer((host, int(port)), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    return server


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="0.0.0.0:6443")
    parser.add_argument("--advertise", default="https://k8s-api:6443", help="server URL in cluster-info")
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--ca", required=True, help="CA certificate published in cluster-info")
    parser.add_argument("--token-file", required=True, help="admin bearer token(s), one a line")
    parser.add_argument("--bootstrap-token", action="append", default=[], help="kubeadm token id.secret")
    parser.add_argument("--bootstrap-token-file", help="file with more bootstrap tokens, one a line")
    parser.add_argument("--termination-seconds", type=float, default=2.0,
                        help="seconds a gracefully deleted pod lingers (no kubelet)")
    parser.add_argument("--log", help="append every request as a JSON line")
    args = parser.parse_args(argv)
    tokens = [line.strip() for line in _read(args.token_file).splitlines() if line.strip()]
    bootstrap = args.bootstrap_token + ([line.strip() for line in _read(args.bootstrap_token_file).splitlines()
                                         if line.strip()] if args.bootstrap_token_file else [])
    state = SimState(tokens, bootstrap, _read(args.ca), args.advertise, args.termination_seconds,
                     args.log)
    server = make_server(state, args.listen, args.cert, args.key)
    print("gpufleet lab Kubernetes API simulation on https://%s" % args.listen, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
