"""Event-log replay: recompute PCRs from ``tpm2_eventlog`` output and hold them to a verified quote.

A quote proves the final PCR values; the event log says which measurements produced them.
Replaying the log (PCR = H(PCR || digest), from zero, event by event, skipping EV_NO_ACTION)
must give the quoted value of every PCR the log touches, or the log is not the one behind the
quote. Compared with a reference log of the same image, the first event whose digest differs
names what changed. A log that starts PCR 0 at another locality (StartupLocality) does not
replay from zero and is refused, not guessed.
"""
import hashlib

from gpufleet.attest.errors import QuoteError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.strict_yaml import StrictYamlError, loads

__all__ = ["check_event_log", "first_difference", "parse_event_log", "replay"]

_BANKS = ("sha1", "sha256", "sha384", "sha512")
_STARTUP_LOCALITY = b"StartupLocality".hex()  # tpm2_eventlog prints this event's data as hex


def parse_event_log(text, where="event log"):
    """``tpm2_eventlog`` YAML -> [{"num", "pcr", "type", "digests": {bank: hex}}] of the measured events."""
    try:
        document = loads(text, where)
    except StrictYamlError as exc:
        raise QuoteError("The %s is not tpm2_eventlog output: %s" % (where, exc.msg), reason="event_log")
    events = document.get("events") if isinstance(document, dict) else None
    if not isinstance(events, list):
        raise QuoteError("The %s has no events list. Send what `tpm2_eventlog <binary log>` prints." % where,
                         reason="event_log")
    measured = []
    for event in events:
        if not isinstance(event, dict) or not isinstance(event.get("PCRIndex"), int):
            raise QuoteError("The %s has an event without a PCRIndex: %r." % (where, event), reason="event_log")
        if event.get("EventType") == "EV_NO_ACTION":
            if event.get("PCRIndex") == 0 and _STARTUP_LOCALITY in str(event.get("Event", "")).lower():
                raise QuoteError("The %s starts PCR 0 at a non-zero locality (StartupLocality); replay from that "
                                 "locality is not supported, so it is refused." % where, reason="event_log")
            continue
        digests = {}
        for item in event.get("Digests") or []:
            bank, value = (item or {}).get("AlgorithmId"), str((item or {}).get("Digest", "")).lower()
            if bank in _BANKS:
                digests[bank] = value
        measured.append({"num": event.get("EventNum"), "pcr": event["PCRIndex"],
                         "type": event.get("EventType", "?"), "digests": digests})
    return measured


def replay(events):
    """{bank: {pcr index (str): hex}} that extending ``events`` in order from zero produces."""
    pcrs = {}
    for event in events:
        for bank, digest in event["digests"].items():
            size = hashlib.new(bank).digest_size
            current = pcrs.setdefault(bank, {}).get(str(event["pcr"]), "00" * size)
            pcrs[bank][str(event["pcr"])] = hashlib.new(bank, bytes.fromhex(current + digest)).hexdigest()
    return pcrs


def _describe(event):
    return "event %s (PCR %s, %s)" % (event["num"], event["pcr"], event["type"])


def first_difference(events, reference_events, bank="sha256"):
    """The description of the first event whose digest differs from the reference log's, or None."""
    for number, (found, expected) in enumerate(zip(events, reference_events)):
        if found["pcr"] != expected["pcr"] or found["digests"].get(bank) != expected["digests"].get(bank):
            return "%s: digest %s, the reference log has %s at that place (%s)" % (
                _describe(found), found["digests"].get(bank), expected["digests"].get(bank), _describe(expected))
    if len(events) != len(reference_events):
        return "the log has %d measured events, the reference log %d (the first %d agree)" % (
            len(events), len(reference_events), min(len(events), len(reference_events)))
    return None


def check_event_log(events, quoted, reference_events=None):
    """QuoteError unless replaying ``events`` gives every quoted PCR it touches (and matches the reference log).

    ``quoted``: the PCRs of a quote that already verified ({bank: {index: hex}}).
    """
    replayed = replay(events)
    unexplained = []
    for bank, values in sorted(replayed.items()):
        for index, value in sorted(values.items(), key=lambda item: int(item[0])):
            found = quoted.get(bank, {}).get(index)
            if found is not None and found != value:
                unexplained.append("%s:%s (log gives %s, quoted %s)" % (bank, index, value, found))
    if unexplained:
        detail = first_difference(events, reference_events) if reference_events is not None else None
        raise QuoteError("The event log does not reproduce the quoted PCR(s) %s.%s Refusing the node: the log is "
                         "not the one behind the quote." % ("; ".join(unexplained),
                                                            " First differing " + detail + "." if detail else ""),
                         reason="event_log_mismatch")
    if reference_events is not None:
        detail = first_difference(events, reference_events)
        if detail:
            raise QuoteError("The event log differs from the reference log: first differing %s." % detail,
                             reason="event_differs")
    return replayed
