# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Parse ``iperf3 -J`` JSON: the end summary of a TCP (or UDP) test.

The receiver's figure (``end/sum_received``) is what crossed the wire; the sender's can
include data still in buffers. An ``error`` key (server busy, connection refused,
interrupted test) fails closed, as does a test that moved no bytes.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import dataclasses

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers._common import extract_json, field

__all__ = ["Iperf3Result", "parse_iperf3"]

TOOL = "iperf3"
_NUMBER = (int, float)


@dataclasses.dataclass(frozen=True)
class Iperf3Result:
    version: object
    protocol: str
    streams: int
    seconds: float
    sent_bps: float
    received_bps: float
    retransmits: object = None
    lost_percent: object = None

    def received_gbps(self):
        """Receiver throughput in Gb/s (10^9 bits/s)."""
        return self.received_bps / 1e9


def parse_iperf3(text):
    """iperf3 -J output -> ``Iperf3Result`` (raises ``ParseError``)."""
    doc = extract_json(text, TOOL, "iperf3 -J JSON")
    if doc.get("error"):
        raise ParseError(TOOL, "a completed test", why="iperf3 reported: %s" % doc["error"])
    start = field(doc, "start", TOOL, dict, "")
    test = field(start, "test_start", TOOL, dict, "start")
    protocol = str(test.get("protocol", "TCP"))
    end = field(doc, "end", TOOL, dict, "")
    if protocol == "UDP":
        total = field(end, "sum", TOOL, dict, "end")
        sent = received = total
    else:
        sent = field(end, "sum_sent", TOOL, dict, "end")
        received = field(end, "sum_received", TOOL, dict, "end")
    if not field(received, "bytes", TOOL, _NUMBER, "end/sum_received"):
        raise ParseError(TOOL, "bytes received by the server", why="the test moved 0 bytes")
    return Iperf3Result(
        version=start.get("version"), protocol=protocol,
        streams=int(field(test, "num_streams", TOOL, _NUMBER, "start/test_start")),
        seconds=float(field(received, "seconds", TOOL, _NUMBER, "end/sum_received")),
        sent_bps=float(field(sent, "bits_per_second", TOOL, _NUMBER, "end/sum_sent")),
        received_bps=float(field(received, "bits_per_second", TOOL, _NUMBER, "end/sum_received")),
        retransmits=sent.get("retransmits"), lost_percent=total.get("lost_percent") if protocol == "UDP" else None)
