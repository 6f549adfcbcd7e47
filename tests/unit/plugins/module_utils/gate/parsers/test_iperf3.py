import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.iperf3 import parse_iperf3
from tests.helpers import shared_fixture

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "iperf3")


def read(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_real_tcp_10s_iperf39():
    with open(shared_fixture("real-outputs", "iperf3_tcp_10s_v3.9.json")) as handle:
        result = parse_iperf3(handle.read())
    assert (result.version, result.protocol, result.streams) == ("iperf 3.9", "TCP", 1)
    assert result.received_gbps() == pytest.approx(0.386380451882619)
    assert result.sent_bps == pytest.approx(385878244.6816436)
    assert result.retransmits == 0


def test_own_eight_streams():
    result = parse_iperf3(read("3.12-tcp-8streams-100g.txt"))
    assert result.streams == 8
    assert result.received_gbps() == pytest.approx(94.18)
    assert result.retransmits == 12


def test_udp_summary():
    text = ('{"start": {"version": "iperf 3.12", "test_start": {"protocol": "UDP", "num_streams": 1}},'
            ' "end": {"sum": {"seconds": 5.0, "bytes": 625000000, "bits_per_second": 1e9, "lost_percent": 0.2}}}')
    result = parse_iperf3(text)
    assert (result.protocol, result.received_gbps(), result.lost_percent) == ("UDP", 1.0, 0.2)


@pytest.mark.parametrize("text, expected", [
    ("", "the output is empty"),
    (read("3.12-error-connection-refused.txt"), "iperf3 reported: unable to connect to server"),
    ('{"start": {"test_start": {"num_streams": 1}}, "end": {}}', '"end/sum_sent"'),
    ('{"start": {"test_start": {"num_streams": 1}}, "end": {"sum_sent": {"bits_per_second": 0},'
     ' "sum_received": {"bytes": 0, "seconds": 1, "bits_per_second": 0}}}', "the test moved 0 bytes"),
    ('{"end": {}}', '"/start"'),
])
def test_failed_test_fails_closed(text, expected):
    with pytest.raises(ParseError) as err:
        parse_iperf3(text)
    assert expected in str(err.value)
