import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.perftest import parse_perftest

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "perftest")


def read(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


@pytest.mark.parametrize("name, device, unit, link, rows, gbps", [
    ("6.10-gdr-400g-mlx5_0.txt", "mlx5_0", "Gb/sec", "IB", 1, 392.82),
    ("6.10-slow-hca-mlx5_1.txt", "mlx5_1", "Gb/sec", "IB", 1, 96.50),
    # MB/sec is 2^20 bytes/s: 11499.66 MB/sec = 96.47 Gb/s; the largest size is the line-rate row
    ("6.10-mbsec-all-sizes-mlx5_3.txt", "mlx5_3", "MB/sec", "Ethernet", 4, 96.4664),
])
def test_reports(name, device, unit, link, rows, gbps):
    result = parse_perftest(read(name))
    assert (result.device, result.unit, result.link_type, len(result.rows)) == (device, unit, link, rows)
    assert result.test == "RDMA_Write BW Test"
    assert result.average_gbps() == pytest.approx(gbps, abs=1e-3)


@pytest.mark.parametrize("text, expected", [
    ("", "the output is empty"),
    (read("6.10-no-device.txt"), "perftest reported an error"),
    (read("6.10-server-timeout.txt"), "the test did not finish"),
    (" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n", "the result table is empty"),
    (" #bytes     #iterations    BW peak[KB/sec]    BW average[KB/sec]   MsgRate[Mpps]\n 65536 10 1 1 1\n",
     "found KB/sec"),
    (" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n 65536 5000 392.9\n",
     "found 3"),
    (" Couldn't connect to 10.31.12.8:18515\n", "perftest reported an error"),
])
def test_incomplete_output_fails_closed(text, expected):
    with pytest.raises(ParseError) as err:
        parse_perftest(text)
    assert expected in str(err.value)


def test_tool_name_is_reported():
    with pytest.raises(ParseError) as err:
        parse_perftest("", tool="ib_read_bw")
    assert err.value.tool == "ib_read_bw"


def test_rdma_core_provider_warnings_are_not_errors():
    warning = ("libibverbs: Warning: couldn't load driver 'libhns-rdmav34.so': libhns-rdmav34.so: "
               "cannot open shared object file: No such file or directory\n")
    result = parse_perftest(warning + read("6.10-gdr-400g-mlx5_0.txt"))
    assert result.average_gbps() == pytest.approx(392.82)
