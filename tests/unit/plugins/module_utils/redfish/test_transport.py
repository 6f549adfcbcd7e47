"""The transport tells refused (never sent) from reset/timeout (maybe sent); no sockets."""
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
