import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.client import (
    RetryPolicy, TransportError,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    BmcAuthError, BmcConnectionError, BmcHTTPError, BmcResponseError,
)

SESSIONS = "/redfish/v1/SessionService/Sessions"
SYSTEM = "/redfish/v1/Systems/1"


def session_ok(rf, token="tok-1"):
    return rf.ok({"Id": "s1"}, 201, {"X-Auth-Token": token, "Location": SESSIONS + "/s1"})


def test_session_login_uses_token_and_logs_out_on_close(rf, generic):
    generic.on("POST", SESSIONS, session_ok(rf))
    with rf.make_client(generic, auth="session") as client:
        assert client.get(SYSTEM)["Id"] == "1"
    get = generic.calls("GET", SYSTEM)[0]
    assert get["headers"]["X-Auth-Token"] == "tok-1" and get["auth"] is None
    assert generic.calls("POST", SESSIONS)[0]["body"] == {"UserName": "admin", "Password": "s3cret-pw"}
    assert [c["method"] for c in generic.calls(path=SESSIONS + "/s1")] == ["DELETE"]
    assert generic.closed


def test_logout_happens_when_the_body_raises(rf, generic):
    generic.on("POST", SESSIONS, session_ok(rf))
    with pytest.raises(RuntimeError):
        with rf.make_client(generic, auth="session") as client:
            client.get(SYSTEM)
            raise RuntimeError("task failed")
    assert generic.calls("DELETE", SESSIONS + "/s1")


def test_auto_falls_back_to_basic_without_session_service(rf, generic):
    with rf.make_client(generic, auth="auto") as client:
        client.get(SYSTEM)
    assert generic.calls("GET", SYSTEM)[0]["auth"] == ("admin", "s3cret-pw")
    assert not generic.calls("DELETE")


def test_basic_auth_never_tries_a_session(rf, generic):
    with rf.make_client(generic, auth="basic") as client:
        client.get(SYSTEM)
    assert not generic.calls("POST", SESSIONS)


def test_session_mode_with_wrong_credentials_is_one_clear_error(rf, generic):
    generic.tree["/redfish/v1/"]["SessionService"] = {"@odata.id": "/redfish/v1/SessionService"}
    generic.on("POST", SESSIONS, rf.ok({"error": {"message": "bad"}}, 401))
    with pytest.raises(BmcAuthError) as err:
        rf.make_client(generic, auth="session").get(SYSTEM)
    assert "node-1" in err.value.msg and "refused the credentials" in err.value.msg
    assert "\n" not in err.value.msg


@pytest.mark.parametrize("status", [401, 404, 405, 501])
def test_session_mode_without_session_service_says_so_and_names_the_fix(rf, generic, status):
    generic.on("POST", SESSIONS, rf.ok({"error": {"message": "no"}}, status))
    with pytest.raises(BmcAuthError) as err:
        rf.make_client(generic, auth="session").get(SYSTEM)
    assert "offers no sessions" in err.value.msg and "refused the credentials" not in err.value.msg
    assert "auth: auto or auth: basic" in err.value.msg
    assert not generic.calls("GET", SYSTEM)  # nothing sent with credentials that cannot work


def test_relogin_once_after_401_mid_run(rf, generic):
    generic.on("POST", SESSIONS, [session_ok(rf, "tok-1"), session_ok(rf, "tok-2")])
    generic.on("GET", SYSTEM, [rf.ok({"error": {}}, 401), rf.ok({"Id": "1"})])
    client = rf.make_client(generic, auth="session")
    assert client.get(SYSTEM) == {"Id": "1"}
    tokens = [c["headers"].get("X-Auth-Token") for c in generic.calls("GET", SYSTEM)]
    assert tokens == ["tok-1", "tok-2"]


def test_second_401_after_relogin_fails(rf, generic):
    generic.on("POST", SESSIONS, session_ok(rf))
    generic.on("GET", SYSTEM, rf.ok({"error": {}}, 401))
    with pytest.raises(BmcAuthError):
        rf.make_client(generic, auth="session").get(SYSTEM)
    assert len(generic.calls("POST", SESSIONS)) == 2


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_retries_with_exponential_backoff(rf, generic, clock, status):
    generic.on("GET", SYSTEM, [rf.ok({}, status), rf.ok({}, status), rf.ok({"Id": "1"})])
    client = rf.make_client(generic, clock)
    assert client.get(SYSTEM) == {"Id": "1"}
    assert clock.sleeps == [0.5, 1.0]


def test_retry_after_is_honoured(rf, generic, clock):
    generic.on("GET", SYSTEM, [rf.ok({}, 503, {"Retry-After": "7"}), rf.ok({"Id": "1"})])
    rf.make_client(generic, clock).get(SYSTEM)
    assert clock.sleeps == [7.0]


def test_retry_after_is_capped():
    assert RetryPolicy(max_delay=30).delay(0, "3600") == 30


def test_5xx_after_all_retries_names_node_status_and_message_id(rf, generic, clock):
    body = {"error": {"code": "Base.1.8.GeneralError", "@Message.ExtendedInfo": [
        {"MessageId": "Base.1.8.ServiceTemporarilyUnavailable", "Message": "busy"}]}}
    generic.on("GET", SYSTEM, rf.ok(body, 503))
    with pytest.raises(BmcHTTPError) as err:
        rf.make_client(generic, clock).get(SYSTEM)
    assert err.value.details["status"] == 503
    assert err.value.details["message_id"] == "Base.1.8.ServiceTemporarilyUnavailable"
    assert "node-1" in err.value.msg and "busy" in err.value.msg
    assert len(generic.calls("GET", SYSTEM)) == 4


def test_connection_errors_are_retried_then_fail_clearly(rf, generic, clock):
    generic.on("GET", SYSTEM, TransportError("connection failed (Connection refused)"))
    with pytest.raises(BmcConnectionError) as err:
        rf.make_client(generic, clock).get(SYSTEM)
    assert "node-1" in err.value.msg and "Connection refused" in err.value.msg
    assert len(generic.calls("GET", SYSTEM)) == 4


def test_tls_failure_is_not_retried(rf, generic, clock):
    generic.on("GET", SYSTEM, TransportError("TLS verification failed (x)", retryable=False))
    with pytest.raises(BmcConnectionError):
        rf.make_client(generic, clock).get(SYSTEM)
    assert len(generic.calls("GET", SYSTEM)) == 1


def test_connection_reset_then_success(rf, generic, clock):
    generic.on("GET", SYSTEM, [TransportError("connection failed (reset)"), rf.ok({"Id": "1"})])
    assert rf.make_client(generic, clock).get(SYSTEM) == {"Id": "1"}


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b"\xff\xfe"])
def test_malformed_json_is_a_clear_error(rf, generic, body):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.client import Response
    generic.on("GET", SYSTEM, Response(200, {}, body))
    with pytest.raises(BmcResponseError) as err:
        rf.make_client(generic).get(SYSTEM)
    assert "node-1" in err.value.msg and SYSTEM in err.value.msg


def test_get_is_cached_within_a_run(rf, generic):
    client = rf.make_client(generic)
    client.get(SYSTEM)
    client.get(SYSTEM)
    client.get(SYSTEM, cached=False)
    assert len(generic.calls("GET", SYSTEM)) == 2


def test_patch_sends_if_match_from_the_etag(rf, generic):
    generic.on("GET", SYSTEM, rf.ok({"Id": "1"}, 200, {"ETag": 'W/"abc"'}))
    client = rf.make_client(generic)
    client.get(SYSTEM)
    client.patch(SYSTEM, {"Boot": {}})
    assert generic.calls("PATCH", SYSTEM)[0]["headers"]["If-Match"] == 'W/"abc"'


@pytest.mark.parametrize("status", [412, 428])
def test_patch_refetches_etag_when_the_bmc_demands_it(rf, generic, status):
    generic.on("GET", SYSTEM, rf.ok({"Id": "1"}, 200, {"ETag": '"v2"'}))
    generic.on("PATCH", SYSTEM, [rf.ok({}, status), rf.ok(None, 204)])
    client = rf.make_client(generic)
    client.patch(SYSTEM, {"Boot": {}})
    patches = generic.calls("PATCH", SYSTEM)
    assert "If-Match" not in patches[0]["headers"] and patches[1]["headers"]["If-Match"] == '"v2"'


@pytest.mark.parametrize("setup", ["auth", "http", "conn", "json"])
def test_password_never_in_errors(rf, generic, clock, setup):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.client import Response
    answers = {"auth": rf.ok({}, 401), "http": rf.ok({}, 400),
               "conn": TransportError("connection failed"), "json": Response(200, {}, b"{")}
    generic.on("GET", SYSTEM, answers[setup])
    with pytest.raises(Exception) as err:
        rf.make_client(generic, clock).get(SYSTEM)
    assert "s3cret-pw" not in repr(err.value.to_fail_kwargs())


def test_baseuri_without_scheme_is_https(rf, generic):
    client = rf.make_client(generic)
    assert client.baseuri == "https://bmc-1.example.net"


@pytest.mark.parametrize("kind, says, fix", [
    ("tls", "TLS verification of the certificate", "Set ca_path"),
    ("connect_timeout", "within the 5 s connect timeout", "reachable from the controller"),
    ("read_timeout", "within the 10 s read timeout", "Raise the timeout option"),
    ("refused", "connection refused", "address and port are right"),
])
def test_no_answer_says_what_happened_and_the_one_fix(rf, generic, clock, kind, says, fix):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.transport import KINDS
    generic.on("GET", SYSTEM, TransportError(KINDS[kind], retryable=kind != "tls", kind=kind))
    with pytest.raises(BmcConnectionError) as err:
        rf.make_client(generic, clock).get(SYSTEM)
    msg = err.value.msg
    assert says in msg and fix in msg and "node-1" in msg
    assert msg.count("(") == msg.count(")") and "(5, 10)" not in msg
    assert "timeout/retries" not in msg
    assert ("Raise the timeout" in msg) == (kind == "read_timeout")  # the one fix that helps
    assert err.value.details["cause"] == kind


@pytest.mark.parametrize("method, headers, safe", [
    ("GET", {}, True), ("HEAD", {}, True), ("POST", {}, False), ("DELETE", {}, False),
    ("PATCH", {}, False), ("PATCH", {"If-Match": '"v1"'}, False), ("PATCH", {"If-Match": "*"}, False),
])
def test_only_idempotent_requests_are_resent_after_a_lost_answer(method, headers, safe):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.client import idempotent
    assert idempotent(method, headers) is safe


def test_post_500_is_not_resent(rf, generic, clock):
    generic.on("POST", SYSTEM + "/Actions/X", rf.ok({"error": {"message": "boom"}}, 500))
    with pytest.raises(BmcHTTPError) as err:
        rf.make_client(generic, clock).post(SYSTEM + "/Actions/X", {})
    assert len(generic.calls("POST")) == 1 and "event log" in err.value.msg


def test_a_redirect_is_not_followed_and_never_read_as_an_empty_resource(rf, generic, clock):
    generic.on("GET", SYSTEM, rf.ok(None, 307, {"Location": SYSTEM}))
    with pytest.raises(BmcHTTPError) as err:
        rf.make_client(generic, clock).get(SYSTEM)
    assert "HTTP 307: a redirect to " + SYSTEM in err.value.msg and "not followed" in err.value.msg
    assert len(generic.calls("GET", SYSTEM)) == 1


ODD_ERROR_BODIES = [
    (b'{"error": "BIOS locked"}', "BIOS locked", None),
    (b'{"error": {"@Message.ExtendedInfo": {"Message": "busy", "MessageId": "Base.1.Busy"}}}',
     "busy", "Base.1.Busy"),
    (b'{"error": {"@Message.ExtendedInfo": ["not an object", 3], "message": "bad"}}', "bad", None),
    (b'{"error": {"@Message.ExtendedInfo": ["only text"]}}', "only text", None),
    (b'{"error": {"@Message.ExtendedInfo": [], "code": 5}}', "", "5"),
    (b'{"error": {"@Message.ExtendedInfo": [{"Message": {"x": 1}, "MessageId": ["y"]}]}}', "", None),
    (b'{"error": null}', "", None),
    (b'{"message": "no error wrapper"}', "no error wrapper", None),
    (b'"a JSON string"', "a JSON string", None),
    (b"42", "42", None),
    (b"null", "", None),
    (b"[1, 2]", "", None),
    (b"<html><head><title>502 Bad Gateway</title></head>\n<body>nginx</body></html>",
     "502 Bad Gateway nginx", None),
    (b"\xff\xfe broken", "broken", None),
    (b"[" * 100000, "[[[", None),
    (b"", "", None),
]


@pytest.mark.parametrize("body, message, message_id", ODD_ERROR_BODIES)
def test_odd_error_bodies_keep_status_method_url_and_add_what_can_be_read(
        rf, generic, clock, body, message, message_id):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.client import Response
    generic.on("PATCH", SYSTEM, Response(400, {}, body))
    with pytest.raises(BmcHTTPError) as err:
        rf.make_client(generic, clock).request("PATCH", SYSTEM, {"Boot": {}})
    msg = err.value.msg
    assert "rejected PATCH %s with HTTP 400" % SYSTEM in msg and "node-1" in msg
    assert (err.value.details["status"], err.value.details["method"], err.value.details["url"]) == (
        400, "PATCH", SYSTEM)
    assert message in msg and "\n" not in msg and len(msg) < 600
    assert err.value.details["message_id"] == message_id


@pytest.mark.parametrize("kind, says, fix", [
    ("plain_http", "answered plain HTTP, not TLS, on that port", "http:// only if this BMC"),
    ("dns", "cannot resolve host bmc-1.example.net", "in the rack description"),
])
def test_plain_http_and_dns_are_named_and_not_retried(rf, generic, clock, kind, says, fix):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.transport import KINDS
    text = KINDS[kind] + (" bmc-1.example.net (Name or service not known)" if kind == "dns"
                          else " (wrong version number (_ssl.c:1006))")
    generic.on("GET", SYSTEM, TransportError(text, retryable=False, sent=False, kind=kind))
    with pytest.raises(BmcConnectionError) as err:
        rf.make_client(generic, clock).get(SYSTEM)
    msg = err.value.msg
    assert says in msg and fix in msg and "node-1" in msg and "\n" not in msg
    assert "Set ca_path" not in msg and "connection refused" not in msg
    assert len(generic.calls("GET", SYSTEM)) == 1 and clock.sleeps == []
    assert err.value.details["cause"] == kind
