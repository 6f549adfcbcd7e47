# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The one HTTP client of the Redfish layer (HTTP itself is in transport.py).

Why plain ``requests`` and not sushy: see docs/redfish.md ("Why not sushy"). In short,
sushy's object layer costs extra round trips per node (root, collection and resource
re-reads), its retry loop ignores Retry-After, and a fan-out over 1,000 BMCs needs a
thin, thread-safe, per-node client with an injectable transport for unit tests.

Behaviour: session auth (X-Auth-Token; logout guaranteed by ``close()``/``with``)
or basic auth, ``auto`` = session when the BMC has a SessionService, else basic;
TLS verified by default (``ca_path`` for a private CA); connect/read timeouts;
retries with exponential backoff honouring Retry-After, but only where a second send
cannot do the work twice (``RetryPolicy``); one re-login on 401; If-Match from the
resource's ETag, and a PATCH whose answer was lost settled by reading the resource back
(``patch``); GETs cached per client (discovery cache within one run).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
import time

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    BmcAuthError, BmcConflictError, BmcConnectionError, BmcHTTPError, OutcomeUnknownError,
    RedfishError,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.transport import (
    HAS_REQUESTS, REQUESTS_IMPORT_ERROR, KINDS, RequestsTransport, Response, TransportError,
)

__all__ = [
    "HAS_REQUESTS", "REQUESTS_IMPORT_ERROR", "Response", "RequestsTransport",
    "RetryPolicy", "RedfishClient", "TransportError", "idempotent",
]

RETRY_STATUSES = frozenset([429, 500, 502, 503, 504])
# Answers proving the BMC did not process the request: 503 (not taken in) and 429 (rate
# limited, RFC 6585: "the request was not processed"). Only these re-send an action.
REFUSED_STATUSES = frozenset([429, 503])
# A gateway in front of the BMC gave up waiting: the BMC itself may have processed it.
GATEWAY_STATUSES = frozenset([502, 504])
SESSIONS_PATH = "/redfish/v1/SessionService/Sessions"
NO_SESSION_STATUSES = (404, 405, 501)


def idempotent(method, headers=None):
    """True when sending the request twice has the effect of sending it once: GET and HEAD.

    Not a PATCH, even with If-Match: a copy sent after the first one landed is refused (412)
    only by a BMC that enforces If-Match. A PATCH whose answer was lost is settled by reading
    the resource again (``RedfishClient.patch``), never by sending it again blindly.
    """
    return method in ("GET", "HEAD")


class RetryPolicy:
    """When to send a request again, and how long to wait first.

    Exponential backoff, capped, honouring a numeric Retry-After from the BMC. An
    idempotent request is re-sent after any transport failure or a 429/5xx answer; an
    action only after an answer proving it was not processed (429, 503) or a failure
    before any byte left (connection refused, connect timeout).
    """

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

    @staticmethod
    def resend_status(status, safe):
        return status in (RETRY_STATUSES if safe else REFUSED_STATUSES)

    @staticmethod
    def resend_failure(exc, safe):
        return exc.retryable and (safe or not exc.sent)


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
        # A second login after a lost answer only opens a spare session that the BMC expires.
        rsp = self._send("POST", SESSIONS_PATH, body, {}, use_auth=False, safe=True)
        if rsp.status in (200, 201, 204) and rsp.headers.get("x-auth-token"):
            self._token = rsp.headers["x-auth-token"]
            self._session_uri = _path_of(rsp.headers.get("location", ""))
            return
        if self.auth == "auto":
            # No SessionService (sushy-tools) or sessions refused: basic auth; the next
            # request proves the credentials either way.
            self._basic = True
            return
        if rsp.status in NO_SESSION_STATUSES or (
                rsp.status in (401, 403) and not self._offers_sessions()):
            raise BmcAuthError(
                "BMC of node %s at %s offers no sessions (HTTP %d to POST %s; its service root "
                "names no SessionService), so auth: session cannot work. Set auth: auto or auth: "
                "basic." % (self.node, self.baseuri, rsp.status, SESSIONS_PATH),
                node=self.node, status=rsp.status)
        if rsp.status in (401, 403):
            raise self._auth_error(rsp, "creating a session")
        raise self._http_error(rsp, "POST", SESSIONS_PATH)

    def _offers_sessions(self):
        """True unless the (unauthenticated) service root shows no SessionService."""
        rsp = self._send("GET", "/redfish/v1/", None, {}, use_auth=False)
        if rsp.status != 200:
            return True  # cannot tell: keep the credentials message
        root = rsp.json(self.node, "/redfish/v1/")
        return bool(root.get("SessionService") or (root.get("Links") or {}).get("Sessions"))

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
        return self._read(path)[0]

    def _read(self, path):
        """GET ``path`` past the cache; ``(resource, response)``, the cache refreshed."""
        rsp = self.request("GET", path)
        data = rsp.json(self.node, path)
        self._cache[path] = (data, rsp.headers.get("etag"))
        return data, rsp

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

    def patch(self, path, body, applied=None):
        """PATCH ``path`` with If-Match from its last read; return the BMC's answer.

        ``applied(resource)`` says whether a resource shows this PATCH in place (default:
        every field of ``body`` has its value; callers pass their own where the BMC reads
        values back differently). A PATCH whose answer was lost is never sent again blindly
        (``_settle``); when a re-read shows it in place, the answer returned is that read's
        and its ``lost`` is the OutcomeUnknownError, so the caller can say how it learned.
        """
        path = _path_of(path)
        before, etag = self._cache.get(path, (None, None))
        state = _PatchState(path, body, applied or (lambda resource: _contains(resource, body)),
                            before, etag)
        try:
            rsp = self.request("PATCH", path, body, headers=_if_match(etag), allow={412, 428})
            if rsp.status in (412, 428):
                rsp = self._patch_read_again(state)
        except OutcomeUnknownError as lost:
            rsp = self._settle(state, lost)
        finally:
            self.invalidate(path)
        return rsp

    def _patch_read_again(self, state):
        """412 (our ETag is stale) or 428 (the BMC wants one): read, then send if still needed.

        Either answer proves this PATCH was not applied. The resource may already show the
        values (another run set them): then nothing is sent.
        """
        current, rsp = self._read(state.path)
        if state.applied(current):
            return rsp
        state.before, state.etag = current, rsp.headers.get("etag")
        return self.request("PATCH", state.path, state.body, headers={"If-Match": state.etag or "*"})

    def _settle(self, state, lost):
        """A PATCH got no answer after it may have landed: read the resource and decide.

        In place -> done (not sent again). Unchanged (same ETag, or without ETags the patched
        fields as they were) -> it did not land: one more copy. Changed otherwise -> someone
        else changed the resource: fail. No way to tell -> the OutcomeUnknownError stands.
        """
        try:
            current, rsp = self._read(state.path)
        except RedfishError:
            raise lost  # cannot settle: the caller reads the state or fails as unknown
        if state.applied(current):
            rsp.lost = lost
            return rsp
        now_etag = rsp.headers.get("etag")
        changed = _changed_since(state, current, now_etag)
        if changed is None:
            raise lost
        if changed:
            raise self._changed_elsewhere(state, lost, now_etag)
        # Provably not applied: one more copy, guarded by the ETag the BMC shows now.
        rsp = self.request("PATCH", state.path, state.body, headers=_if_match(now_etag),
                           allow={412})
        if rsp.status == 412:  # changed between our read and this copy: judge by the values
            current, rsp = self._read(state.path)
            if not state.applied(current):
                raise self._changed_elsewhere(state, lost, rsp.headers.get("etag"))
        return rsp

    def _changed_elsewhere(self, state, lost, now_etag):
        etags = (" (ETag %s, now %s)" % (state.etag, now_etag)) if state.etag and now_etag else ""
        return BmcConflictError(
            "PATCH %s on node %s got no answer (%s) and was not sent again: reading it back shows "
            "the resource changed%s but not to the requested %s, so something else changed it "
            "meanwhile (another tool or a user of the BMC) or the BMC applied other values. "
            "Check %s on the BMC and who else manages it, then re-run the task."
            % (state.path, self.node, lost.details.get("cause"), etags,
               _oneline(json.dumps(state.body, sort_keys=True), 200), state.path),
            node=self.node, url=state.path, method="PATCH", cause=lost.details.get("cause"))

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
        if rsp.status >= 300 and rsp.status not in (allow or ()):
            raise self._http_error(rsp, method, path)
        return rsp

    # -- internals -----------------------------------------------------------
    def _send(self, method, path, body, headers, use_auth=True, safe=None):
        """Send, re-sending only what ``RetryPolicy`` allows; ``safe`` overrides idempotence."""
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
        safe = idempotent(method, hdrs) if safe is None else safe
        attempt = 0
        while True:
            self.requests_sent += 1
            try:
                rsp = self._transport.send(method, self.baseuri + path, hdrs, data,
                                           self._timeout, auth=auth)
            except TransportError as exc:
                if exc.sent and not safe:
                    raise self._outcome_unknown(method, path, _cause(exc, self._timeout))
                if attempt >= self.retry.retries or not self.retry.resend_failure(exc, safe):
                    raise self._no_answer(method, path, exc, attempt + 1)
                delay = self.retry.delay(attempt)
            else:
                if not safe and rsp.status in GATEWAY_STATUSES:
                    raise self._outcome_unknown(method, path, "HTTP %d from a gateway in front "
                                                "of the BMC" % rsp.status)
                if attempt >= self.retry.retries or not self.retry.resend_status(rsp.status, safe):
                    return rsp
                delay = self.retry.delay(attempt, rsp.headers.get("retry-after"))
            self._sleep(delay)
            attempt += 1

    def _outcome_unknown(self, method, path, cause):
        return OutcomeUnknownError(
            "BMC of node %s at %s gave no answer to %s %s (%s); the action may have run, so it "
            "was not sent again. Read the node's state to see whether it took effect."
            % (self.node, self.baseuri, method, path, cause),
            node=self.node, url=path, method=method, cause=cause)

    def _no_answer(self, method, path, exc, attempts):
        connect, read = self._timeout
        where = "BMC of node %s at %s" % (self.node, self.baseuri)
        tries = "%d attempt%s" % (attempts, "s" if attempts > 1 else "")
        if exc.kind == "tls":
            msg = ("TLS verification of the certificate of the %s failed: %s. Set ca_path to the "
                   "CA that signed this BMC's certificate (validate_certs: false only for a lab "
                   "BMC you trust)." % (where, exc))
        elif exc.kind == "plain_http":
            msg = ("%s answered plain HTTP, not TLS, on that port (%s %s: %s); this is not a "
                   "certificate problem, ca_path and validate_certs do not change it. Set baseuri "
                   "to the BMC's HTTPS port, or to http:// only if this BMC really has no TLS."
                   % (where, method, path, exc))
        elif exc.kind == "dns":
            msg = ("%s: %s; not retried (a name that does not resolve will not in seconds). Check "
                   "the BMC address (baseuri) of this node in the rack description." % (where, exc))
        elif exc.kind == "connect_timeout":
            msg = ("%s accepted no connection for %s %s within the %s s connect timeout (%s). "
                   "Check that the address is right and reachable from the controller (routing, "
                   "firewall)." % (where, method, path, connect, tries))
        elif exc.kind == "read_timeout":
            msg = ("%s took the connection but sent no answer to %s %s within the %s s read "
                   "timeout (%s). Raise the timeout option if this BMC is slow."
                   % (where, method, path, read, tries))
        else:
            msg = ("%s did not answer %s %s: %s (%s). Check that the address and port are right "
                   "and the BMC is reachable from the controller." % (where, method, path, exc, tries))
        return BmcConnectionError(msg, node=self.node, url=path, cause=exc.kind)

    def _auth_error(self, rsp, action):
        return BmcAuthError(
            "BMC of node %s at %s refused the credentials (HTTP %d) while %s. Check the "
            "username/password for this BMC (vault) and that the account is enabled."
            % (self.node, self.baseuri, rsp.status, action),
            node=self.node, status=rsp.status)

    def _http_error(self, rsp, method, path):
        message, message_id = redfish_message(rsp.body)
        if 300 <= rsp.status < 400:
            message = "a redirect to %s" % _oneline(rsp.headers.get("location") or "nowhere", 200)
        return BmcHTTPError(
            "BMC of node %s at %s rejected %s %s with HTTP %d%s. %s"
            % (self.node, self.baseuri, method, path, rsp.status,
               (": " + message) if message else "", _hint(rsp.status)),
            node=self.node, status=rsp.status, method=method, url=path, message_id=message_id)


class _PatchState:
    """One PATCH being settled: what it sets and the resource as read before it."""

    def __init__(self, path, body, applied, before, etag):
        self.path, self.body, self.applied = path, body, applied
        self.before, self.etag = before, etag


def _if_match(etag):
    return {"If-Match": etag} if etag else {}


def _contains(resource, body):
    """True when every field of ``body`` (nested objects field by field) has its value."""
    if not isinstance(resource, dict):
        return False
    for key, value in body.items():
        if isinstance(value, dict):
            if not _contains(resource.get(key), value):
                return False
        elif resource.get(key) != value:
            return False
    return True


def _fields_of(resource, body):
    """The fields of ``resource`` that ``body`` sets, in ``body``'s shape."""
    if not isinstance(resource, dict):
        return None
    return dict((key, _fields_of(resource.get(key), value) if isinstance(value, dict)
                 else resource.get(key)) for key, value in body.items())


def _changed_since(state, current, now_etag):
    """Did the resource change since the PATCH's read? True/False, or None (cannot tell)."""
    if state.etag and now_etag:
        return now_etag != state.etag
    if state.before is None:
        return None
    return _fields_of(current, state.body) != _fields_of(state.before, state.body)


def _cause(exc, timeout):
    """A transport failure in words, with the timeout that ran out."""
    if exc.kind == "read_timeout":
        return "%s of %s s" % (KINDS["read_timeout"], timeout[1])
    return str(exc)


def _hint(status):
    if 300 <= status < 400:
        return ("Redfish resources answer in place; the redirect was not followed (a loop or a "
                "proxy in the way?). Check baseuri: use the BMC's own address.")
    if status == 404:
        return "The resource does not exist on this BMC: check the system id."
    if status in REFUSED_STATUSES:
        return "The BMC stayed busy through all retries; retry later or raise retries."
    if status in RETRY_STATUSES:
        return "The BMC reported a server error; check its event log, then retry."
    return "Check the request against the BMC's allowed values."


def redfish_message(body):
    """``(message, message_id)`` read from an error body of any shape; ``("", None)`` if none.

    Redfish says ``{"error": {"code", "message", "@Message.ExtendedInfo": [{...}]}}``, but
    BMCs and proxies also send a bare string, one ExtendedInfo object, HTML or nothing:
    whatever can be read is used, and reading never fails (the caller keeps the status).
    """
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else u"%s" % (body,)
    try:
        data = json.loads(text)
    except (ValueError, RuntimeError):  # RuntimeError: nesting deeper than the recursion limit
        return _oneline(_strip_tags(text), 200), None
    error = data.get("error", data) if isinstance(data, dict) else data
    if not isinstance(error, dict):
        return _oneline(_text(error), 200), None
    infos = error.get("@Message.ExtendedInfo")
    infos = infos if isinstance(infos, list) else [infos]
    info = ([i for i in infos if isinstance(i, dict)] or [{}])[0]
    loose = [_text(i) for i in infos if _text(i)]  # ExtendedInfo as plain strings
    message = (_text(info.get("Message")) or _text(error.get("message"))
               or (loose[0] if loose else ""))
    message_id = _text(info.get("MessageId")) or _text(error.get("code"))
    return _oneline(message, 200), (_oneline(message_id, 100) or None)


def _text(value):
    """A JSON value as message text: strings as they are, numbers shown, the rest empty."""
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, (int, float, str, type(u""))):
        return u"%s" % (value,)
    return ""


def _strip_tags(text):
    """Crude HTML to text (an error page from a proxy or the BMC's web server)."""
    return re.sub(r"<[^>]*>", " ", re.sub(r"(?is)<(script|style)[^>]*>.*?</\1>", " ", text))


def _oneline(text, limit):
    """``text`` on one line (control characters and runs of space collapsed), cut at limit."""
    text = re.sub(r"[\s\x00-\x1f\x7f-\x9f]+", " ", text).strip()
    return text if len(text) <= limit else text[:limit - 3].rstrip() + "..."


def _path_of(url):
    """Reduce an absolute URL or @odata.id to a path starting with /."""
    if "://" in url:
        url = "/" + url.split("://", 1)[1].split("/", 1)[-1]
    return url if url.startswith("/") else "/" + url
