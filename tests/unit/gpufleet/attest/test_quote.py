"""Quotes from a real swtpm checked against the enrolled AK, the nonce book and reference PCRs."""
import os
import re

import pytest

from gpufleet.attest import quote
from gpufleet.attest.errors import QuoteError

from tests.unit.gpufleet.attest.swtpm_support import enroll_node, ledger_store

NODE = "gpu-101"


def reference_pcrs(tpm, selection="sha256:0,1,2,7"):
    """What a known-good node measures, read with tpm2_pcrread (not through the code under test)."""
    text = tpm.tool("tpm2_pcrread", selection).stdout.decode()
    return {"sha256": dict((m.group(1), m.group(2).lower())
                           for m in re.finditer(r"^\s+(\d+)\s*:\s*0x([0-9A-Fa-f]+)\s*$", text, re.M))}


def _enrolled(tmp_path_factory, tpm, ca, algorithm):
    root = tmp_path_factory.mktemp("quote-" + algorithm)
    store = ledger_store(root / "enrolled")
    folder = str(root / "node")
    ak_public = tpm.create_ak(folder, algorithm)
    enroll_node(store, NODE, tpm.ek_certificate(), ca.bundle, ak_public,
                       lambda blob: tpm.activate(folder, blob))
    return {"store": store, "folder": folder, "root": root}


@pytest.fixture(scope="module")
def node(tmp_path_factory, node_tpm, vendor_ca):
    return _enrolled(tmp_path_factory, node_tpm, vendor_ca, "ecc")


def _book(tmp_path):
    return quote.NonceBook(str(tmp_path / "nonces.json"))


@pytest.mark.parametrize("algorithm", ["rsa", "ecc"])
def test_clean_enroll_and_quote_passes(tmp_path_factory, tmp_path, node_tpm, vendor_ca, algorithm):
    enrolled = _enrolled(tmp_path_factory, node_tpm, vendor_ca, algorithm)
    book = _book(tmp_path)
    references = reference_pcrs(node_tpm)
    nonce = book.issue(NODE)
    result = quote.verify_join(enrolled["store"], book, NODE, *node_tpm.quote(enrolled["folder"], nonce),
                               references=references)
    assert result["pcrs"] == references
    assert result["attest"]["extra_data"] == nonce


def test_replayed_quote_is_refused(tmp_path, node, node_tpm):
    book = _book(tmp_path)
    references = reference_pcrs(node_tpm)
    old = node_tpm.quote(node["folder"], book.issue(NODE))
    quote.verify_join(node["store"], book, NODE, *old, references=references)
    book.issue(NODE)  # the controller asks again; the node answers with the old quote
    with pytest.raises(QuoteError) as info:
        quote.verify_join(node["store"], book, NODE, *old, references=references)
    assert info.value.details["reason"] == "replayed"
    # a restarted controller reads the same book and still refuses it
    with pytest.raises(QuoteError, match="already used"):
        quote.verify_join(node["store"], _book(tmp_path), NODE, *old, references=references)


def test_quote_by_an_ak_never_enrolled_is_refused(tmp_path, node, node_tpm):
    folder = str(tmp_path / "fresh-ak")
    node_tpm.create_ak(folder)
    book = _book(tmp_path)
    with pytest.raises(QuoteError) as info:
        quote.verify_join(node["store"], book, NODE, *node_tpm.quote(folder, book.issue(NODE)),
                          references=reference_pcrs(node_tpm))
    assert info.value.details["reason"] == "bad_signature"


def test_pcr_extended_after_references_is_refused_naming_it(tmp_path, node, node_tpm):
    book = _book(tmp_path)
    references = reference_pcrs(node_tpm)
    node_tpm.tool("tpm2_pcrextend", "7:sha256=" + "ab" * 32)
    quoted = reference_pcrs(node_tpm)["sha256"]["7"]
    with pytest.raises(QuoteError) as info:
        quote.verify_join(node["store"], book, NODE, *node_tpm.quote(node["folder"], book.issue(NODE)),
                          references=references)
    assert info.value.details["reason"] == "pcr_mismatch"
    assert info.value.details["pcrs"] == ["sha256:7"]
    assert "PCR sha256:7 is %s, expected %s" % (quoted, references["sha256"]["7"]) in info.value.msg


def test_pcr_values_not_matching_the_signed_digest_are_refused(tmp_path, node, node_tpm):
    book = _book(tmp_path)
    references = reference_pcrs(node_tpm)
    message, signature, values = node_tpm.quote(node["folder"], book.issue(NODE))
    forged = bytearray(values)
    forged[-32:] = bytes.fromhex(references["sha256"]["7"])
    if bytes(forged) == values:
        forged[-1] ^= 1
    with pytest.raises(QuoteError) as info:
        quote.verify_join(node["store"], book, NODE, message, signature, bytes(forged), references=references)
    assert info.value.details["reason"] == "pcr_digest"


def test_reference_pcr_that_was_not_quoted_is_named(tmp_path, node, node_tpm):
    book = _book(tmp_path)
    references = reference_pcrs(node_tpm)
    references["sha256"]["4"] = "00" * 32
    with pytest.raises(QuoteError, match="PCR sha256:4 is not quoted"):
        quote.verify_join(node["store"], book, NODE, *node_tpm.quote(node["folder"], book.issue(NODE)),
                          references=references)


def test_nonce_issued_to_another_node_is_unknown(tmp_path, node, node_tpm):
    book = _book(tmp_path)
    with pytest.raises(QuoteError) as info:
        quote.verify_join(node["store"], book, NODE, *node_tpm.quote(node["folder"], book.issue("gpu-999")),
                          references=reference_pcrs(node_tpm))
    assert info.value.details["reason"] == "unknown"


def test_quote_with_another_nonce_than_expected_is_refused(node, node_tpm):
    record = node["store"].get(NODE)
    message, signature, values = node_tpm.quote(node["folder"], "aa" * 20)
    with pytest.raises(QuoteError) as info:
        quote.verify_quote(record["ak_pem"], message, signature, values, "bb" * 20, reference_pcrs(node_tpm))
    assert info.value.details["reason"] == "wrong_nonce"


def test_no_references_is_refused(node, node_tpm):
    record = node["store"].get(NODE)
    with pytest.raises(QuoteError, match="prove nothing"):
        quote.verify_quote(record["ak_pem"], *node_tpm.quote(node["folder"], "aa" * 20), nonce="aa" * 20,
                           references={"sha256": {}})


def test_node_that_was_never_enrolled_is_refused(tmp_path, node_tpm):
    with pytest.raises(QuoteError) as info:
        quote.verify_join(ledger_store(tmp_path), _book(tmp_path), "gpu-404", b"", b"", b"",
                          references={"sha256": {"0": "00" * 32}})
    assert info.value.details["reason"] == "not_enrolled"


@pytest.mark.parametrize("message", [b"", b"\xff\x54\x43\x47\x80\x17", b"garbage that is long enough to read"])
def test_malformed_quote_message_is_a_clear_error(message):
    with pytest.raises(QuoteError):
        quote.parse_attest(message)


def test_nonce_expires(tmp_path):
    now = [1000.0]
    book = quote.NonceBook(ttl_s=60, clock=lambda: now[0])
    nonce = book.issue(NODE)
    now[0] += 61
    with pytest.raises(QuoteError) as info:
        book.consume(NODE, nonce)
    assert info.value.details["reason"] == "expired"
    with pytest.raises(QuoteError) as info:
        book.consume(NODE, nonce)
    assert info.value.details["reason"] == "replayed"


def test_nonce_book_file_is_private_and_damage_is_refused(tmp_path):
    path = tmp_path / "nonces.json"
    quote.NonceBook(str(path)).issue(NODE)
    assert oct(os.stat(str(path)).st_mode & 0o777) == "0o600"
    path.write_text("{")
    with pytest.raises(QuoteError, match="cannot be read"):
        quote.NonceBook(str(path))
