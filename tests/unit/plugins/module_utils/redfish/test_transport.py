"""The transport tells refused (never sent) from reset/timeout (maybe sent), a plain HTTP
port from a certificate failure, and a name that does not resolve. No sockets, except one
test that talks TLS to a plain HTTP server on the loopback (what OpenSSL answers varies by
version, so the real library is asked)."""
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
import requests
from urllib3 import exceptions as u3

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import transport as tp


def _raising(exc):
    class Session:
        def request(self, *args, **kwargs):
            raise exc

        def close(self):
            pass
    t = tp.RequestsTransport()
    t._session = Session()
    return t


REFUSED = requests.exceptions.ConnectionError(u3.MaxRetryError(
    None, "/redfish/v1/", u3.NewConnectionError(None, "Failed to establish a new connection: "
                                                "[Errno 111] Connection refused")))
RESET = requests.exceptions.ConnectionError(u3.ProtocolError(
    "Connection aborted.", ConnectionResetError(104, "Connection reset by peer")))
TLS = requests.exceptions.SSLError(u3.MaxRetryError(None, "/redfish/v1/", u3.SSLError(
    "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate "
    "in certificate chain (_ssl.c:992)")))


@pytest.mark.parametrize("exc, kind, sent, retryable", [
    (REFUSED, "refused", False, True),
    (RESET, "reset", True, True),
    (requests.exceptions.ConnectTimeout("x"), "connect_timeout", False, True),
    (requests.exceptions.ReadTimeout("x"), "read_timeout", True, True),
    (TLS, "tls", False, False),
])
def test_failures_are_classified(exc, kind, sent, retryable):
    with pytest.raises(tp.TransportError) as err:
        _raising(exc).send("POST", "https://bmc/redfish/v1/x", {}, "{}", (5, 10))
    assert (err.value.kind, err.value.sent, err.value.retryable) == (kind, sent, retryable)
    text = str(err.value)
    assert text.count("(") == text.count(")") and "(5, 10)" not in text


def test_tls_reason_is_the_verification_failure():
    with pytest.raises(tp.TransportError) as err:
        _raising(TLS).send("GET", "https://bmc/redfish/v1/", {}, None, (5, 10))
    assert str(err.value).startswith("self-signed certificate in certificate chain")


def _ssl_error(reason, text):
    inner = ssl.SSLError(1, "[SSL: %s] %s (_ssl.c:1006)" % (reason, text))
    inner.reason = reason
    return requests.exceptions.SSLError(u3.MaxRetryError(None, "/redfish/v1/", u3.SSLError(inner)))


@pytest.mark.parametrize("reason, text", [
    ("WRONG_VERSION_NUMBER", "wrong version number"),      # OpenSSL 1.1 / 3.0
    ("RECORD_LAYER_FAILURE", "record layer failure"),      # OpenSSL 3.2+
    ("HTTP_REQUEST", "http request"),
])
def test_a_plain_http_port_is_not_blamed_on_the_certificate(reason, text):
    with pytest.raises(tp.TransportError) as err:
        _raising(_ssl_error(reason, text)).send("GET", "https://bmc:80/redfish/v1/", {}, None, (5, 10))
    assert (err.value.kind, err.value.sent, err.value.retryable) == ("plain_http", False, False)
    assert str(err.value).startswith("the BMC answered plain HTTP, not TLS, on that port")


@pytest.mark.parametrize("reason, text", [
    ("CERTIFICATE_VERIFY_FAILED", "certificate verify failed: self-signed certificate"),
    ("TLSV1_ALERT_PROTOCOL_VERSION", "tlsv1 alert protocol version"),
])
def test_real_tls_failures_stay_tls(reason, text):
    with pytest.raises(tp.TransportError) as err:
        _raising(_ssl_error(reason, text)).send("GET", "https://bmc/redfish/v1/", {}, None, (5, 10))
    assert err.value.kind == "tls"


class _PlainHttp(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass  # keep the test output clean


def test_https_to_a_real_plain_http_server_is_named_plain_http():
    server = HTTPServer(("127.0.0.1", 0), _PlainHttp)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = "https://127.0.0.1:%d/redfish/v1/" % server.server_address[1]
        with pytest.raises(tp.TransportError) as err:
            tp.RequestsTransport().send("GET", url, {}, None, (5, 10))  # bounded: no hang
    finally:
        server.shutdown()
        server.server_close()
    assert err.value.kind == "plain_http", str(err.value)


def test_a_name_that_does_not_resolve_is_named_and_not_retryable():
    gai = socket.gaierror(-2, "Name or service not known")
    failed = u3.NameResolutionError("bmc-r1-07.example.net", None, gai)
    failed.__cause__ = gai  # urllib3 2: raise NameResolutionError(...) from the gaierror
    exc = requests.exceptions.ConnectionError(u3.MaxRetryError(None, "/redfish/v1/", failed))
    with pytest.raises(tp.TransportError) as err:
        _raising(exc).send("GET", "https://bmc-r1-07.example.net:443/redfish/v1/", {}, None, (5, 10))
    assert (err.value.kind, err.value.sent, err.value.retryable) == ("dns", False, False)
    assert str(err.value) == "cannot resolve host bmc-r1-07.example.net (Name or service not known)"


def test_a_dns_failure_wrapped_the_urllib3_1_way_is_found_too():
    """urllib3 < 2: a NewConnectionError raised while handling the gaierror."""
    try:
        try:
            raise socket.gaierror(-3, "Temporary failure in name resolution")
        except socket.gaierror:
            raise u3.NewConnectionError(None, "Failed to establish a new connection")
    except u3.NewConnectionError as new:
        exc = requests.exceptions.ConnectionError(u3.MaxRetryError(None, "/redfish/v1/", new))
    with pytest.raises(tp.TransportError) as err:
        _raising(exc).send("GET", "https://admin@[fd00::7]:8443/redfish/v1/", {}, None, (5, 10))
    assert err.value.kind == "dns" and "cannot resolve host fd00::7" in str(err.value)
