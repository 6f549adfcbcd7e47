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
            raise TransportError(_first_line(exc), retryable=False, sent=False, kind="tls")
        except requests.exceptions.ConnectTimeout:
            raise TransportError(KINDS["connect_timeout"], sent=False, kind="connect_timeout")
        except requests.exceptions.Timeout:
            raise TransportError(KINDS["read_timeout"], kind="read_timeout")
        except requests.exceptions.RequestException as exc:
            raise _connection_error(exc)
        return Response(rsp.status_code, rsp.headers, rsp.content)

    def close(self):
        self._session.close()


def _connection_error(exc):
    """Refused (never sent) or reset/aborted (maybe sent), from the urllib3 cause."""
    cause = exc.args[0] if exc.args else None
    reason = getattr(cause, "reason", cause)
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
