import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.fio import parse_fio
from tests.helpers import shared_fixture

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "fio")


def read(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_real_randrw_nvme_fio316():
    with open(shared_fixture("real-outputs", "fio_randrw_nvme_v3.16.json")) as handle:
        result = parse_fio(handle.read())
    assert result.version == "fio-3.16"
    assert result.bandwidth_mbs("read") == pytest.approx(348.743777)
    assert result.iops("read") == pytest.approx(85138.890741)
    assert result.iops("write") == pytest.approx(85066.128925)
    assert result.jobs[0].rw == "randrw"


def test_own_seq_read_captured_on_tmpfs():
    result = parse_fio(read("3.33-seq-read-1job-tmpfs.txt"))
    assert result.version == "fio-3.33"
    assert result.bandwidth_mbs("read") == pytest.approx(1341.4685)
    with pytest.raises(ParseError) as err:
        result.bandwidth_mbs("write")
    assert "no job did any writes (rw=read)" in str(err.value)


def test_own_two_jobs_are_summed():
    result = parse_fio(read("3.33-rand-write-2jobs.txt"))
    assert len(result.jobs) == 2
    assert result.iops("write") == pytest.approx(71507.492507 + 70725.274725)


def test_kib_only_bandwidth_of_older_builds():
    text = ('{"fio version": "fio-3.1", "jobs": [{"jobname": "j", "error": 0, "job options": {"rw": "read"},'
            ' "read": {"bw": 1000, "iops": 250.0, "io_bytes": 4096000},'
            ' "write": {"bw": 0, "iops": 0.0, "io_bytes": 0}}]}')
    assert parse_fio(text).bandwidth_mbs("read") == pytest.approx(1.024)


@pytest.mark.parametrize("text, expected", [
    ("", "the output is empty"),
    ("fio: failed parsing rw=sideways\n", "no line starts a JSON object"),
    (read("3.33-error-enospc.txt"), "fio reported error 28"),
    ('{"jobs": []}', "the jobs list is empty"),
    ('{"jobs": [{"jobname": "j", "error": 0, "read": {"iops": 1, "io_bytes": 1}, "write": {}}]}', "jobs/0/read/bw"),
    ('{"jobs": [{"jobname": "j", "error": 0, "read": {"bw_bytes": "fast", "iops": 1, "io_bytes": 1}}]}',
     "to be a number"),
])
def test_malformed_output_fails_closed(text, expected):
    with pytest.raises(ParseError) as err:
        parse_fio(text)
    assert expected in str(err.value)
