"""Event-log replay: a binary log read by the real tpm2_eventlog, held to a real swtpm quote."""
import hashlib
import os
import struct

import pytest

from gpufleet.attest import eventlog, quote
from gpufleet.attest.errors import QuoteError
from cryptography.hazmat.primitives import serialization
from gpufleet.attest.tpm_public import parse_public
from tests.unit.gpufleet.attest.swtpm_support import SoftTpm, require_tools, run

EV_NO_ACTION, EV_IPL = 0x03, 0x0D
BOOT = [(8, b"grub.cfg: menuentry gpufleet"), (9, b"/boot/vmlinuz-6.1"), (8, b"linux root=/dev/nvme0n1p2")]


def binary_log(measurements, event_type=EV_IPL):
    """A crypto-agile (TCG PC Client) event log with one sha256 digest per event."""
    spec = (b"Spec ID Event03\x00" + struct.pack("<IBBBB", 0, 0, 2, 0, 2) + struct.pack("<I", 1)
            + struct.pack("<HH", 0x000B, 32) + b"\x00")
    log = struct.pack("<II", 0, 3) + b"\x00" * 20 + struct.pack("<I", len(spec)) + spec
    for pcr, data in measurements:
        log += (struct.pack("<IIIH", pcr, event_type, 1, 0x000B) + hashlib.sha256(data).digest()
                + struct.pack("<I", len(data)) + data)
    return log


def eventlog_text(tmp_path, measurements, name, event_type=EV_IPL):
    require_tools()
    path = os.path.join(str(tmp_path), name)
    with open(path, "wb") as handle:
        handle.write(binary_log(measurements, event_type))
    return run(["tpm2_eventlog", path]).stdout.decode()


@pytest.fixture(scope="module")
def booted(tmp_path_factory, vendor_ca):
    """A fresh TPM whose PCRs 8 and 9 were extended with BOOT, and a verified quote of them."""
    root = tmp_path_factory.mktemp("eventlog")
    tpm = SoftTpm(str(root / "tpm"), vendor_ca).start()
    try:
        for pcr, data in BOOT:
            tpm.tool("tpm2_pcrextend", "%d:sha256=%s" % (pcr, hashlib.sha256(data).hexdigest()))
        folder = str(root / "node")
        ak_pem = parse_public(tpm.create_ak(folder))["key"].public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        nonce = "cd" * 20
        message, signature, values = tpm.quote(folder, nonce, "sha256:8,9")
    finally:
        tpm.stop()
    pcrs = quote.split_pcr_values(values, quote.parse_attest(message)["selection"])
    verified = quote.verify_quote(ak_pem, message, signature, values, nonce, pcrs)["pcrs"]
    return {"pcrs": verified, "root": root}


def test_log_of_the_boot_reproduces_the_quote(tmp_path, booted):
    events = eventlog.parse_event_log(eventlog_text(tmp_path, BOOT, "boot.bin"))
    assert [e["num"] for e in events] == [1, 2, 3]
    assert eventlog.check_event_log(events, booted["pcrs"], reference_events=events) == booted["pcrs"]


def test_altered_log_is_refused_naming_the_pcr_and_first_event(tmp_path, booted):
    reference = eventlog.parse_event_log(eventlog_text(tmp_path, BOOT, "reference.bin"))
    altered = eventlog.parse_event_log(eventlog_text(tmp_path, [BOOT[0], (9, b"/boot/vmlinuz-evil"), BOOT[2]],
                                                     "altered.bin"))
    with pytest.raises(QuoteError) as info:
        eventlog.check_event_log(altered, booted["pcrs"], reference_events=reference)
    assert info.value.details["reason"] == "event_log_mismatch"
    assert "sha256:9" in info.value.msg and "sha256:8 " not in info.value.msg
    assert "event 2 (PCR 9, EV_IPL)" in info.value.msg


def test_boot_that_differs_from_the_reference_names_the_first_event(tmp_path, booted):
    events = eventlog.parse_event_log(eventlog_text(tmp_path, BOOT, "boot.bin"))
    reference = eventlog.parse_event_log(eventlog_text(tmp_path, BOOT[:2] + [(8, b"linux root=/dev/sda2")],
                                                       "reference.bin"))
    with pytest.raises(QuoteError) as info:
        eventlog.check_event_log(events, booted["pcrs"], reference_events=reference)
    assert info.value.details["reason"] == "event_differs"
    assert "event 3 (PCR 8, EV_IPL)" in info.value.msg


@pytest.mark.parametrize("text", ["", "just text", "events: 3", "events:\n- EventNum: 1\n"])
def test_text_that_is_not_an_event_log_is_refused(text):
    with pytest.raises(QuoteError):
        eventlog.parse_event_log(text)


def test_startup_locality_is_refused_not_guessed(tmp_path):
    text = eventlog_text(tmp_path, [(0, b"StartupLocality\x00\x03")], "locality.bin", event_type=EV_NO_ACTION)
    with pytest.raises(QuoteError, match="StartupLocality"):
        eventlog.parse_event_log(text)
