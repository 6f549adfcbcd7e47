import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.kernel_log import parse_kernel_log

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "dmesg")


def read(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


@pytest.mark.parametrize("name, codes, sxids, by_gpu", [
    ("550-xid-79-and-48.txt", (48, 63, 79), (12028, 12028), {"0000:3a:00": (48, 63), "0000:9a:00": (79,)}),
    ("470-journal-xid-13.txt", (13, 13), (), {"0000:18:00": (13,)}),
    ("550-clean-boot.txt", (), (), {}),
])
def test_xid_events(name, codes, sxids, by_gpu):
    log = parse_kernel_log(read(name))
    assert log.codes() == codes
    assert tuple(e.code for e in log.sxids) == sxids
    assert log.by_gpu() == by_gpu


def test_event_keeps_message_and_line():
    event = parse_kernel_log(read("550-xid-79-and-48.txt")).xids[-1]
    assert event.line_no == 11
    assert event.message.endswith("GPU has fallen off the bus.")


@pytest.mark.parametrize("text, expected", [
    ("", "the output is empty"),
    ("dmesg: read kernel buffer failed: Operation not permitted\n", "run as root or grant CAP_SYSLOG"),
    ("[  1.0] NVRM: Xid (PCI:0000:3a:00) 79 GPU has fallen off the bus.\n", "must not be skipped"),
])
def test_unreadable_or_unknown_fails_closed(text, expected):
    with pytest.raises(ParseError) as err:
        parse_kernel_log(text)
    assert expected in str(err.value)
