# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The one HTTP client of the Redfish layer (the only file importing ``requests``).

Why plain ``requests`` and not sushy: see docs/redfish.md ("Why not sushy"). In short,
sushy's object layer costs extra round trips per node (root, collection and resource
re-reads), its retry loop ignores Retry-After, and a fan-out over 1,000 BMCs needs a
thin, thread-safe, per-node client with an injectable transport for unit tests.

Behaviour: session auth (X-Auth-Token; logout guaranteed by ``close()``/``with``)
or basic auth, ``auto`` = session when the BMC has a SessionService, else basic;
TLS verified by default (``ca_path`` for a private CA); connect/read timeouts;
retries with exponential backoff on connection errors, 429 and 5xx honouring
Retry-After; one re-login on 401; If-Match from the resource's ETag when the BMC
demands it (412/428); GETs cached per client (discovery cache within one run).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import time

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    BmcAuthError, BmcConnectionError, BmcHTTPError, BmcResponseError,
)

try:
    import requests
    HAS_REQUESTS = True
    REQUESTS_IMPORT_ERROR = None
except ImportError as exc:  # pragma: no cover - depends on the host
    HAS_REQUESTS = False
    REQUESTS_IMPORT_ERROR = exc

__all__ = [
    "HAS_REQUESTS", "REQUESTS_IMPORT_ERROR", "Response", "RequestsTransport",
    "RetryPolicy", "RedfishClient", "TransportError",
]

RETRY_STATUSES = frozenset([429, 500, 502, 503, 504])
SESSIONS_PATH = "/redfish/v1/SessionService/Sessions"


class TransportError(Exception):
    """Raised by a transport when no HTTP answer arrived (reset, refused, timeout, TLS)."""

    def __init__(self, msg, retryable=True):
        super(TransportError, self).__init__(msg)
        self.retryable = retryable


class Response:
    """One HTTP answer: status, headers (lower-case keys) and raw body."""

    def __init__(self, status, headers=None, body=b""):
        self.status = status
        self.headers = dict((k.lower(), v) for k, v in (headers or {}).items())
        self.body = body or b""

    def json(self, node="", url=""):
        if not self.body.strip():
            return {}
        try:
            data = json.loads(self.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise BmcResponseError(
                "BMC of node %s answered %s with malformed JSON (%s); the BMC firmware may be "
                "faulty or a proxy rewrote the answer. Retry, or check the BMC." % (node, url, exc),
                node=node, url=url, status=self.status)
        if not isinstance(data, dict):
            raise BmcResponseError(
                "BMC of node %s answered %s with JSON that is not an object." % (node, url),
                node=node, url=url, status=self.status)
        return data


class RequestsTransport:
    """HTTP over a keep-alive ``requests.Session`` (one per client, so thread-safe per node)."""

    def __init__(self, verify=True):
        self._session = requests.Session()
        self._verify = verify  # passed per request: a Session attribute loses to REQUESTS_CA_BUNDLE

    def send(self, method, url, headers, body, timeout, auth=None):
        try:
            rsp = self._session.request(method, url, headers=headers, data=body, verify=self._verify,
                                        timeout=timeout, auth=auth, allow_redirects=False)
        except requests.exceptions.SSLError as exc:
            raise TransportError(
                "TLS verification failed (%s); set ca_path to the CA that signed the BMC "
                "certificate" % _first_line(exc), retryable=False)
        except requests.exceptions.Timeout:
            raise TransportError("timed out after %s s" % (timeout,))
        except requests.exceptions.RequestException as exc:
            raise TransportError("connection failed (%s)" % _first_line(exc))
        return Response(rsp.status_code, rsp.headers, rsp.content)

    def close(self):
        self._session.close()


def _first_line(exc):
    """The innermost reason of a requests/urllib3 error, without the URL repetition."""
    text = str(exc)
    if "Caused by " in text:
        text = text.split("Caused by ", 1)[-1]
    for marker in ("certificate verify failed: ", "] ", ">: "):
        if marker in text:
            text = text.split(marker, 1)[-1]
            break
    return text.strip("()'\" ,")[:160]


class RetryPolicy:
    """Exponential backoff, capped, honouring a numeric Retry-After from the BMC."""

    def __init__(self, retries=3, backoff=0.5, max_delay=30.0):
        self.retries = retries
        self.backoff = backoff
        self.max_delay = max_delay

    def delay(self, attempt, retry_after=None):
        if retry_after is not None:
            try:
                return min(max(float(retry_after), 0.0), self.max_delay)
            except ValueError:
                pass  # an HTTP date: fall back to our own backoff
        return min(self.backoff * (2 ** attempt), self.max_delay)


class RedfishClient:
    """Talks to one BMC. Use as a context manager so a session is always logged out."""

    def __init__(self, baseuri, username=None, password=None, auth="auto",
                 validate_certs=True, ca_path=None, timeout=10, connect_timeout=5,
                 retry=None, node=None, transport=None, sleep=time.sleep, clock=time.monotonic):
        if "://" not in baseuri:
            baseuri = "https://" + baseuri
        self.baseuri = baseuri.rstrip("/")
        self.node = node or self.baseuri.split("://", 1)[1]
        self._username = username
        self._password = password
        self.auth = auth
        verify = (ca_path or True) if validate_certs else False
        self._transport = transport or RequestsTransport(verify=verify)
        self._timeout = (connect_timeout, timeout)
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self.clock = clock
        self._token = None
        self._session_uri = None
        self._basic = auth == "basic"
        self._cache = {}
        self.discovered = {}  # resource paths found by discovery, kept for this client's life
        self.requests_sent = 0

    def sleep(self, seconds):
        self._sleep(seconds)

    # -- lifecycle -----------------------------------------------------------
    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def login(self):
        """Open a session (auth=session/auto); auto falls back to basic without SessionService."""
        if self._basic or self._token:
            return
        body = {"UserName": self._username, "Password": self._password}
        rsp = self._send("POST", SESSIONS_PATH, body, {}, use_auth=False)
        if rsp.status in (200, 201, 204) and rsp.headers.get("x-auth-token"):
            self._token = rsp.headers["x-auth-token"]
            self._session_uri = _path_of(rsp.headers.get("location", ""))
            return
        if self.auth == "auto":
            # No SessionService (sushy-tools) or sessions refused: basic auth; the next
            # request proves the credentials either way.
            self._basic = True
            return
        if rsp.status in (401, 403):
            raise self._auth_error(rsp, "creating a session")
        raise self._http_error(rsp, "POST", SESSIONS_PATH)

    def close(self):
        """Log out (best effort, once) and release connections."""
        token, uri = self._token, self._session_uri
        self._token = self._session_uri = None
        try:
            if token and uri:
                try:
                    self._transport.send("DELETE", self.baseuri + uri,
                                         {"X-Auth-Token": token}, None, self._timeout)
                except TransportError:
                    pass  # the BMC expires the session itself; nothing else we can do
        finally:
            if hasattr(self._transport, "close"):
                self._transport.close()

    # -- verbs ---------------------------------------------------------------
    def get(self, path, cached=True):
        """GET a resource as a dict; cached for the life of this client unless cached=False."""
        path = _path_of(path)
        if cached and path in self._cache:
            return self._cache[path][0]
        rsp = self.request("GET", path)
        data = rsp.json(self.node, path)
        self._cache[path] = (data, rsp.headers.get("etag"))
        return data

    def remember(self, path, rsp):
        """Cache a GET answer obtained through ``request`` (discovery's direct lookups)."""
        data = rsp.json(self.node, path)
        self._cache[_path_of(path)] = (data, rsp.headers.get("etag"))
        return data

    def invalidate(self, path=None):
        if path is None:
            self._cache.clear()
        else:
            self._cache.pop(_path_of(path), None)

    def post(self, path, body=None):
        return self.request("POST", path, body if body is not None else {})

    def patch(self, path, body):
        """PATCH with If-Match when we know the ETag; on 412/428 refetch the ETag and retry once."""
        path = _path_of(path)
        etag = self._cache.get(path, (None, None))[1]
        headers = {"If-Match": etag} if etag else {}
        rsp = self.request("PATCH", path, body, headers=headers, allow={412, 428})
        if rsp.status in (412, 428):
            self.get(path, cached=False)
            etag = self._cache[path][1] or "*"
            rsp = self.request("PATCH", path, body, headers={"If-Match": etag})
        self.invalidate(path)
        return rsp

    def request(self, method, path, body=None, headers=None, allow=None):
        """Send with auth, retries and one re-login; raise on a final error status not in allow."""
        self.login()
        path = _path_of(path)
        rsp = self._send(method, path, body, headers or {})
        if rsp.status == 401 and not self._basic:
            self._token = None  # session expired or revoked by the BMC: log in again once
            self.login()
            rsp = self._send(method, path, body, headers or {})
        if rsp.status in (401, 403):
            raise self._auth_error(rsp, "%s %s" % (method, path))
        if rsp.status >= 400 and rsp.status not in (allow or ()):
            raise self._http_error(rsp, method, path)
        return rsp

    # -- internals -----------------------------------------------------------
    def _send(self, method, path, body, headers, use_auth=True):
        hdrs = {"Accept": "application/json", "OData-Version": "4.0"}
        if body is not None:
            hdrs["Content-Type"] = "application/json"
        hdrs.update(headers)
        auth = None
        if use_auth and self._token:
            hdrs["X-Auth-Token"] = self._token
        elif use_auth:
            auth = (self._username or "", self._password or "")
        data = json.dumps(body) if body is not None else None
        attempt = 0
        while True:
            self.requests_sent += 1
            try:
                rsp = self._transport.send(method, self.baseuri + path, hdrs, data,
                                           self._timeout, auth=auth)
            except TransportError as exc:
                if attempt >= self.retry.retries or not exc.retryable:
                    raise BmcConnectionError(
                        "BMC of node %s at %s did not answer %s %s: %s (after %d attempts). "
                        "Check that the BMC address is right and reachable from the controller, "
                        "or raise timeout/retries." % (self.node, self.baseuri, method, path, exc,
                                                       attempt + 1),
                        node=self.node, url=path)
                self._sleep(self.retry.delay(attempt))
                attempt += 1
                continue
            if rsp.status in RETRY_STATUSES and attempt < self.retry.retries:
                self._sleep(self.retry.delay(attempt, rsp.headers.get("retry-after")))
                attempt += 1
                continue
            return rsp

    def _auth_error(self, rsp, action):
        return BmcAuthError(
            "BMC of node %s at %s refused the credentials (HTTP %d) while %s. Check the "
            "username/password for this BMC (vault) and that the account is enabled."
            % (self.node, self.baseuri, rsp.status, action),
            node=self.node, status=rsp.status)

    def _http_error(self, rsp, method, path):
        message, message_id = _redfish_message(rsp)
        return BmcHTTPError(
            "BMC of node %s at %s rejected %s %s with HTTP %d%s. %s"
            % (self.node, self.baseuri, method, path, rsp.status,
               (": " + message) if message else "", _hint(rsp.status)),
            node=self.node, status=rsp.status, url=path, message_id=message_id)


def _hint(status):
    if status == 404:
        return "The resource does not exist on this BMC: check the system id."
    if status in RETRY_STATUSES:
        return "The BMC stayed busy through all retries; retry later or raise retries."
    return "Check the request against the BMC's allowed values."


def _redfish_message(rsp):
    """The Redfish error message and MessageId, if the body carries them."""
    try:
        err = json.loads(rsp.body.decode("utf-8")).get("error", {})
    except (ValueError, UnicodeDecodeError, AttributeError):
        return rsp.body.decode("utf-8", "replace").strip()[:200], None
    infos = err.get("@Message.ExtendedInfo") or [{}]
    info = infos[0] if isinstance(infos[0], dict) else {}
    message = info.get("Message") or err.get("message") or ""
    return message, info.get("MessageId") or err.get("code")


def _path_of(url):
    """Reduce an absolute URL or @odata.id to a path starting with /."""
    if "://" in url:
        url = "/" + url.split("://", 1)[1].split("/", 1)[-1]
    return url if url.startswith("/") else "/" + url
