# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""HTTP for the Redfish client: the only file importing ``requests``.

A transport sends one request and returns a ``Response``, or raises ``TransportError``
when no HTTP answer arrived. The error says what kind of failure it was (``kind``) and
whether the request may have reached the BMC (``sent``): the client re-sends an action
only when it provably did not (docs/redfish.md, "Retries").
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import socket
import ssl

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    BmcResponseError,
)

try:
    import requests
    from urllib3 import exceptions as urllib3_exceptions
    HAS_REQUESTS = True
    REQUESTS_IMPORT_ERROR = None
except ImportError as exc:  # pragma: no cover - depends on the host
    HAS_REQUESTS = False
    REQUESTS_IMPORT_ERROR = exc

__all__ = ["HAS_REQUESTS", "REQUESTS_IMPORT_ERROR", "KINDS", "Response", "RequestsTransport",
           "TransportError"]

# kind -> what happened, in words (the client adds the node, the request and the fix)
KINDS = {
    "tls": "TLS verification of the BMC certificate failed",
    "plain_http": "the BMC answered plain HTTP, not TLS, on that port",
    "dns": "cannot resolve host",
    "connect_timeout": "no connection within the connect timeout",
    "read_timeout": "no answer within the read timeout",
    "refused": "connection refused",
    "reset": "connection reset before an answer",
    "connection": "connection failed",
}


class TransportError(Exception):
    """No HTTP answer arrived.

    ``retryable``: another attempt can help (False for TLS failures). ``sent``: the request
    may have reached the BMC (False only when no connection was ever made).
    """

    def __init__(self, msg, retryable=True, sent=True, kind="connection"):
        super(TransportError, self).__init__(msg)
        self.retryable = retryable
        self.sent = sent
        self.kind = kind


class Response:
    """One HTTP answer: status, headers (lower-case keys) and raw body.

    ``lost``: set by ``RedfishClient.patch`` when this is the read that proved a PATCH in
    place after the PATCH's own answer was lost (the OutcomeUnknownError); else None.
    """

    def __init__(self, status, headers=None, body=b""):
        self.status = status
        self.headers = dict((k.lower(), v) for k, v in (headers or {}).items())
        self.body = body or b""
        self.lost = None

    def json(self, node="", url=""):
        if not self.body.strip():
            return {}
        try:
            data = json.loads(self.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RuntimeError) as exc:
            # RuntimeError: JSON nested deeper than the recursion limit
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
            raise _tls_error(exc)
        except requests.exceptions.ConnectTimeout:
            raise TransportError(KINDS["connect_timeout"], sent=False, kind="connect_timeout")
        except requests.exceptions.Timeout:
            raise TransportError(KINDS["read_timeout"], kind="read_timeout")
        except requests.exceptions.RequestException as exc:
            raise _connection_error(exc, url)
        return Response(rsp.status_code, rsp.headers, rsp.content)

    def close(self):
        self._session.close()


# OpenSSL's reasons when the peer's first bytes are not a TLS record: a plain HTTP server
# answering "HTTP/1.1 400" to our ClientHello (1.1/3.0: wrong version number, 3.2+: record
# layer failure; "http request" is the same mix-up seen from the other side).
PLAIN_HTTP_REASONS = ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "HTTP_REQUEST")


def _tls_error(exc):
    """A handshake with a plain HTTP port, or a real TLS failure (certificate, protocol)."""
    text = str(exc)
    reasons = [getattr(e, "reason", None) or "" for e in _chain(exc) if isinstance(e, ssl.SSLError)]
    markers = [r.replace("_", " ").lower() for r in PLAIN_HTTP_REASONS]
    if (any(r.upper() in PLAIN_HTTP_REASONS for r in reasons)
            or any(m in text.lower() for m in markers) or "HTTP/1." in text):
        return TransportError("%s (%s)" % (KINDS["plain_http"], _first_line(exc)), retryable=False,
                              sent=False, kind="plain_http")
    return TransportError(_first_line(exc), retryable=False, sent=False, kind="tls")


def _chain(exc, depth=8):
    """``exc`` and the exceptions it wraps (args, urllib3 ``reason``, cause, context)."""
    found, todo = [], [exc]
    while todo and len(found) < depth * 4:
        item = todo.pop(0)
        if not isinstance(item, BaseException) or any(item is f for f in found):
            continue
        found.append(item)
        todo.extend([getattr(item, name, None) for name in ("reason", "__cause__", "__context__")]
                    + list(item.args[:1]))
    return found


def _dns_errors():
    # urllib3 < 2 has no NameResolutionError; its NewConnectionError wraps the gaierror.
    return (socket.gaierror, getattr(urllib3_exceptions, "NameResolutionError", socket.gaierror))


def _host_of(url):
    """The host part of ``url`` (no scheme, credentials, port or path)."""
    rest = url.split("://", 1)[-1].split("/", 1)[0].rsplit("@", 1)[-1]
    if rest.startswith("["):
        return rest[1:].split("]", 1)[0]
    return rest.rsplit(":", 1)[0] if rest.count(":") == 1 else rest


def _connection_error(exc, url=""):
    """DNS failure or refused (never sent), or reset/aborted (maybe sent), from the cause."""
    cause = exc.args[0] if exc.args else None
    reason = getattr(cause, "reason", cause)
    chain = _chain(exc)
    if any(isinstance(e, _dns_errors()) for e in chain):
        # A name that does not resolve will not resolve seconds later: not retried.
        why = [e for e in chain if isinstance(e, socket.gaierror)]
        detail = (" (%s)" % (why[0].strerror or why[0])) if why else ""
        return TransportError("%s %s%s" % (KINDS["dns"], _host_of(url), detail), retryable=False,
                              sent=False, kind="dns")
    if isinstance(reason, urllib3_exceptions.NewConnectionError):
        return TransportError("%s (%s)" % (KINDS["refused"], _first_line(exc)), sent=False,
                              kind="refused")
    if isinstance(cause, urllib3_exceptions.ProtocolError):
        return TransportError("%s (%s)" % (KINDS["reset"], _first_line(exc)), kind="reset")
    return TransportError("%s (%s)" % (KINDS["connection"], _first_line(exc)))


def _first_line(exc):
    """The innermost reason of a requests/urllib3 error, without the URL repetition."""
    text = str(exc)
    if "Caused by " in text:
        text = text.split("Caused by ", 1)[-1]
    for marker in ("certificate verify failed: ", "] ", ">: "):
        if marker in text:
            text = text.split(marker, 1)[-1]
            break
    text = text.strip("()'\" ,")[:160]
    # Truncation or the split above can leave one side of a pair: keep the text balanced.
    return text.replace("(", "").replace(")", "") if text.count("(") != text.count(")") else text
