import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nccl import parse_nccl
from tests.helpers import shared_fixture

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "nccl")
GIB8 = 8589934592


def read(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_real_legacy_format_8xa100():
    with open(shared_fixture("real-outputs", "nccl_all_reduce_8xA100_legacy_format.txt")) as handle:
        result = parse_nccl(handle.read())
    assert result.table_format == "legacy"
    assert result.version is None
    assert (result.nranks, result.runs, len(result.rows)) == (8, 1, 34)
    assert result.busbw_at(GIB8) == 235.26
    assert result.row(GIB8).ip_busbw == 235.03
    assert result.row(GIB8).oop_wrong is None  # "N/A": validation was off
    assert result.row(GIB8).root is None
    assert (result.out_of_bounds, result.out_of_bounds_ok) == (0, True)
    assert result.avg_busbw == 68.4048  # the footer average is far below the large-size figure
    assert result.wrong_total() == 0


@pytest.mark.parametrize("name, nranks, runs, busbw, oob, wrong", [
    ("2.14-pass-8xh100-single-node.txt", 8, 1, 481.57, 0, 0),
    ("2.14-pass-16xh100-two-nodes.txt", 16, 1, 391.57, 0, 0),
    ("2.14-fail-wrong-values.txt", 8, 1, 479.57, 24576, 24576),
    ("2.14-nonmpi-busbw-zero.txt", 1, 2, 0.0, 0, 0),
])
def test_current_format(name, nranks, runs, busbw, oob, wrong):
    result = parse_nccl(read(name))
    assert result.table_format == "current"
    assert result.version == "2.14.1"
    assert (result.nranks, result.runs) == (nranks, runs)
    assert result.busbw_at(GIB8) == busbw
    assert result.out_of_bounds == oob
    assert result.out_of_bounds_ok is (oob == 0)
    assert result.wrong_total() == wrong
    assert result.row(GIB8).root == -1


def test_missing_message_size_names_the_measured_range():
    result = parse_nccl(read("2.14-pass-8xh100-single-node.txt"))
    with pytest.raises(ParseError) as err:
        result.busbw_at(16 * GIB8)
    assert "from 8388608 to 8589934592 bytes" in str(err.value)


HEADER_NEW = ("#       size         count      type   redop    root     time   algbw   busbw #wrong"
              "     time   algbw   busbw #wrong\n")
ROW_NEW = "     8388608       2097152     float     sum      -1    58.46  143.50  251.13      0    59.04  142.08  248.64      0\n"
FOOTER = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 251.1\n"


@pytest.mark.parametrize("text, expected, line_no", [
    ("", "the output is empty", None),
    ("all_reduce_perf: error while loading shared libraries: libnccl.so.2\n", "no result table", None),
    (read("2.14-truncated.txt"), "the run was cut short", None),
    (HEADER_NEW + FOOTER, "the table is empty", None),
    (HEADER_NEW + ROW_NEW.replace("251.13", "fast") + FOOTER, "'fast' is not a number", 2),
    (HEADER_NEW + ROW_NEW.replace("     -1", "") + FOOTER, "found 12", 2),
    ("#  size count type redop time algbw busbw\n", 'a header with "root"', 1),
    (ROW_NEW.replace("     -1", "").replace("  0\n", "\n") + FOOTER, "13 columns (current format) or 12", 1),
    (ROW_NEW.replace("float", "3.5") + FOOTER, "a data type and a reduction name", 1),
    (ROW_NEW + ROW_NEW.replace("     -1", "") + FOOTER, "found 12", 2),  # a current table cannot turn legacy
    (ROW_NEW + ROW_NEW.replace("8388608       2097152", "4194304       1048576") + FOOTER, "interleaved", 2),
    (ROW_NEW + FOOTER + ROW_NEW.replace("float", "3.5"), "a data type and a reduction name", 4),
    (HEADER_NEW + "gpu-n07: Test NCCL failure common.cu:1050 'unhandled system error'\n", "reported a failure", 2),
    (HEADER_NEW + ROW_NEW + HEADER_NEW.replace("root", "").replace("#wrong", "error") + FOOTER,
     "the format changed mid-output", 3),
])
def test_malformed_output_fails_closed(text, expected, line_no):
    with pytest.raises(ParseError) as err:
        parse_nccl(text)
    assert expected in str(err.value)
    assert err.value.line_no == line_no
    assert err.value.tool == "nccl-tests"


def test_nccl_info_and_warn_lines_are_ignored():
    text = (HEADER_NEW + "gpu-n07:3442:3442 [0] NCCL INFO Launch mode Parallel\n"
            "gpu-n07:3442:3460 [0] NCCL WARN NET/IB : Got async event : port error\n" + ROW_NEW + FOOTER)
    assert parse_nccl(text).busbw_at(8388608) == 251.13


@pytest.mark.parametrize("name, runs, busbw", [
    ("2.14-headerless-job-log-8xh100.txt", 1, 481.57),
    ("2.14-headerless-nonmpi-busbw-zero.txt", 2, 0.0),
])
def test_headerless_capture_is_recognised_from_its_rows(name, runs, busbw):
    result = parse_nccl(read(name))
    assert (result.table_format, result.runs, result.nranks) == ("current", runs, 0)
    assert result.busbw_at(GIB8) == busbw
    assert result.row(GIB8).root == -1 and result.wrong_total() == 0


def test_headerless_capture_matches_the_full_output():
    full = parse_nccl(read("2.14-pass-8xh100-single-node.txt"))
    bare = parse_nccl(read("2.14-headerless-job-log-8xh100.txt"))
    assert bare.rows == full.rows and bare.avg_busbw == full.avg_busbw


def test_real_legacy_capture_without_its_header_lines():
    """The real A100 log cut at its first result row, as a job log shows it."""
    with open(shared_fixture("real-outputs", "nccl_all_reduce_8xA100_legacy_format.txt")) as handle:
        lines = handle.read().split("\n")
    first = next(i for i, line in enumerate(lines) if line.strip().startswith("0 "))
    bare = parse_nccl("\n".join(lines[first:]))
    assert bare.table_format == "legacy" and len(bare.rows) == 34
    assert bare.busbw_at(GIB8) == 235.26 and bare.row(GIB8).oop_wrong is None


# nccl-tests 2.19 (hand-made from the print formats of NVIDIA/nccl-tests src/util.cu at 2.19.6:
# "unalign" in the nThread line, "#  Rank  0 Group  0 Pid ..." lines, getFloatStr widths, so a
# single rank's near-zero in-place time prints its algbw as "4e+06").

def test_2_19_single_rank_is_one_rank_of_one_run():
    result = parse_nccl(read("2.19-single-rank-1xh100.txt"))
    assert (result.version, result.nranks, result.runs, len(result.rows)) == ("2.19.6", 1, 1, 4)
    assert result.busbw_at(GIB8) == 0.0 and result.row(GIB8).oop_algbw == 1338.2
    assert result.row(GIB8).ip_algbw == 3e7 and not result.separate_runs()


def test_2_19_processes_without_mpi_interleaved_under_mpirun():
    """4 header blocks, then 4 tables: each process flushes its header, then its table at exit."""
    result = parse_nccl(read("2.19-nonmpi-mpirun-4proc-interleaved.txt"))
    assert (result.nranks, result.runs, result.rows) == (1, 4, ())
    assert result.separate_runs() and result.version == "2.19.6"
    with pytest.raises(ParseError, match="no result row could be read"):
        result.row(GIB8)


def _by_line(texts):
    """Copies of single-rank outputs interleaved line by line (mpirun with line-buffered output)."""
    split = [t.split("\n") for t in texts]
    return "\n".join(line for group in zip(*split) for line in group)


def test_line_by_line_interleaving_is_recognised():
    one = read("2.19-single-rank-1xh100.txt")
    text = _by_line([one.replace("48213", str(pid)) for pid in (700, 701, 702)])
    result = parse_nccl(text)
    assert (result.nranks, result.runs) == (1, 3)


def test_a_failure_in_interleaved_output_stays_the_reason():
    one = read("2.19-single-rank-1xh100.txt")
    failed = one.replace("# Out of bounds", "gpu-h100-07: Test NCCL failure common.cu:1050 'unhandled cuda error'\n"
                                            "# Out of bounds")
    with pytest.raises(ParseError, match="nccl-tests reported a failure"):
        parse_nccl(_by_line([one, failed]))


def test_ranks_of_one_mpi_run_are_not_separate_processes():
    """8 ranks, 8 Pids (one process per GPU under MPI): one run, not 8 single-rank processes."""
    result = parse_nccl(read("2.14-pass-8xh100-single-node.txt"))
    assert (result.nranks, result.runs) == (8, 1) and not result.separate_runs()
