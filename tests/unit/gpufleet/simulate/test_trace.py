"""Trace readers: the four formats, detection, selection, and errors that name the line."""
import os

import pytest

from gpufleet.simulate.errors import SimulateError, TraceError
from gpufleet.simulate.trace import MAX_SPAN_DAYS, detect, read_trace, select
from tests.helpers import shared_fixture

HELIOS_HEADER = ("time,total_job_num,running_job_num,pending_job_num,total_gpujob_num,running_gpujob_num,"
                 "pending_gpujob_num,total_gpu_num,running_gpu_num,pending_gpu_num,idle_gpu_num,gpu_utilization,"
                 "running_gpu_num_noless_8,running_gpu_num_less_8,pending_gpu_num_noless_8,pending_gpu_num_less_8,"
                 "total_gpu_num_noless_8,total_gpu_num_less_8,running_job_num_noless_8,running_job_num_less_8,"
                 "pending_job_num_noless_8,pending_job_num_less_8,total_job_num_noless_8,total_job_num_less_8")


def _helios_row(minute, run8, run_small, pend8, pend_small):
    return ("2020-05-01 00:%02d:00,0,0,0,0,0,0,208,%d,%d,0,0.5,%d,%d,%d,%d,0,0,0,0,0,0,0,0"
            % (minute, run8 + run_small, pend8 + pend_small, run8, run_small, pend8, pend_small))


def _write(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_helios_gang_and_single_node_demand(tmp_path):
    path = _write(tmp_path, "h.csv", [HELIOS_HEADER, _helios_row(0, 160, 2, 0, 0), _helios_row(1, 160, 2, 16, 3)])
    trace = read_trace(path)
    assert trace.fmt == "helios"
    assert trace.gang_gpus == (160, 176)
    assert trace.small_gpus == (2, 5)
    assert trace.times[1] - trace.times[0] == 60.0 and trace.step == 60.0
    assert trace.times[0] == 1588291200.0          # 2020-05-01 00:00:00 UTC


def test_node_series_and_gpu_series(tmp_path):
    nodes = read_trace(_write(tmp_path, "n.csv", ["time,active,total", "0,2,10", "60,3,10"]), gpus_per_node=4)
    assert nodes.fmt == "nodes" and nodes.small_gpus == (8, 12) and nodes.gang_gpus == (0, 0)
    gpus = read_trace(_write(tmp_path, "g.csv", ["time,gpus", "2026-01-01T00:00:00Z,5", "2026-01-01T00:01:00Z,7"]))
    assert gpus.fmt == "gpus" and gpus.small_gpus == (5, 7)


def test_ledger_demand_history(tmp_path):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.decisions import record_demand
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger

    path = str(tmp_path / "ledger.db")
    ledger = Ledger(path)
    for pool, minute, running, pending in (("a", 60, 8, 0), ("a", 120, 8, 8), ("b", 60, 1, 0)):
        record_demand(ledger, pool, minute, running, pending, pending)
    ledger.close()
    assert detect(path) == "ledger"
    trace = read_trace(path, pool="a")
    assert trace.times == (60.0, 120.0) and trace.small_gpus == (8, 16) and trace.gang_gpus == (0, 0)
    with pytest.raises(TraceError, match="name one with --pool"):
        read_trace(path)
    with pytest.raises(TraceError, match="pool 'c' has no demand_history"):
        read_trace(path, pool="c")


@pytest.mark.parametrize("lines, message", [
    (["time,gpus", "0,4", "60,x"], r"line 3 column gpus: 'x' is not a number"),
    (["time,gpus", "0,4", "60,-1"], r"line 3 column gpus: '-1' is not a whole number"),
    (["time,gpus", "0,4", "60,1.5"], r"line 3 column gpus: '1.5' is not a whole number"),
    (["time,gpus", "60,4", "0,4"], r"line 3: time goes backwards"),
    (["time,gpus", "yesterday,4"], r"line 2 column time: time 'yesterday'"),
    (["time,gpus", "0,4,9"], r"line 2: the row's field count differs"),
    (["time,active,total", "0,5,4"], r"line 2: active \(5\) exceeds total \(4\)"),
    (["when,load"], r"line 1: header 'when,load' matches no trace format"),
    (["time,gpus"], r"has no samples"),
    # Non-finite and huge values: once tracebacks, a hang (1e300) and 5 GB of jobs (1e20).
    (["time,gpus", "0,4", "60,nan"], r"line 3 column gpus: 'nan' is not a whole number"),
    (["time,gpus", "0,4", "60,inf"], r"line 3 column gpus: 'inf' is not a whole number"),
    (["time,gpus", "0,4", "60,1e20"], r"line 3 column gpus: '1e20' is above the simulator's bound of 1000000"),
    (["time,active,total", "0,1,1e400"], r"line 2 column total: '1e400' is not a whole number"),
    (["time,gpus", "0,4", "nan,4"], r"line 3 column time: time 'nan' is not a time between 1970-01-01 and 9999-12-31"),
    (["time,gpus", "0,4", "inf,4"], r"line 3 column time: time 'inf' is not a time between"),
    (["time,gpus", "0,4", "1e300,4"], r"line 3 column time: time '1e300' is not a time between"),
    (["time,gpus", "-60,4"], r"line 2 column time: time '-60' is not a time between"),
    (["time,gpus", "0001-01-01T00:00:00+05:00,4"], r"line 2 column time: time '0001-01-01T00:00:00\+05:00'"),
    (["time,gpus", "0,4", "315619201,4"], r"line 3: time 1980-01-02 00:00:01 is more than 3653 days \(10 years\) "
                                          r"after the first sample \(1970-01-01 00:00:00\)"),
    (["time,gpus", "0,1", "1'" + "1" * 200000], r"line 3: not readable as CSV \(field larger than field limit"),
])
def test_bad_trace_names_the_line(tmp_path, lines, message):
    with pytest.raises(TraceError, match=message):
        read_trace(_write(tmp_path, "bad.csv", lines))


def test_demand_bound_counts_the_sum_of_a_row(tmp_path):
    helios = _write(tmp_path, "h.csv", [HELIOS_HEADER, _helios_row(0, 600000, 0, 600000, 0)])
    with pytest.raises(TraceError, match=r"line 2: demand of 1200000 GPUs is not between 0 and 1000000"):
        read_trace(helios)
    nodes = _write(tmp_path, "n.csv", ["time,active,total", "0,200000,200000"])
    with pytest.raises(TraceError, match=r"line 2: demand of 1600000 GPUs"):
        read_trace(nodes, gpus_per_node=8)


def test_a_ten_year_trace_is_read(tmp_path):
    trace = read_trace(_write(tmp_path, "g.csv", ["time,gpus", "0,1", "%d,1" % (MAX_SPAN_DAYS * 86400)]))
    assert trace.times[-1] == MAX_SPAN_DAYS * 86400.0


def test_ledger_minute_out_of_range_is_named(tmp_path):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.decisions import record_demand
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger

    path = str(tmp_path / "ledger.db")
    ledger = Ledger(path)
    record_demand(ledger, "a", 60, 8, 0, 0)
    record_demand(ledger, "a", 10 ** 15, 8, 0, 0)
    ledger.close()
    with pytest.raises(TraceError, match=r"demand_history pool a row 2 \(minute 999999999999960\): time 999999999999960.0 is not a time "
                                         r"between 1970-01-01 and 9999-12-31 .* Fix or drop the row."):
        read_trace(path)


def test_named_format_missing_columns(tmp_path):
    path = _write(tmp_path, "g.csv", ["time,gpus", "0,1"])
    with pytest.raises(TraceError, match=r"line 1: the helios format needs column\(s\) running_gpu_num_noless_8"):
        read_trace(path, fmt="helios")


def test_select_window_and_scale(tmp_path):
    trace = read_trace(_write(tmp_path, "g.csv", ["time,gpus", "0,1", "60,3", "120,5"]))
    part = select(trace, 60, 120, scale=2.5)
    assert part.times == (60.0,) and part.small_gpus == (8,)      # ceil(3 * 2.5)
    with pytest.raises(TraceError, match="no samples between --from and --to"):
        select(trace, 500, 600)


@pytest.mark.parametrize("scale, message", [
    (float("nan"), r"--scale nan: give a demand multiplier above 0"),
    (float("inf"), r"--scale inf: give a demand multiplier above 0"),
    (-1.0, r"--scale -1.0: give a demand multiplier above 0"),
    (0.0, r"--scale 0.0: give a demand multiplier above 0"),
    (1e300, r"--scale 1e\+300: demand at 1970-01-01 00:02:00 becomes 5e\+300 GPUs, above the simulator's bound"),
])
def test_select_refuses_a_scale_out_of_bounds(tmp_path, scale, message):
    trace = read_trace(_write(tmp_path, "g.csv", ["time,gpus", "0,0", "60,0", "120,5"]))
    with pytest.raises(SimulateError, match=message):
        select(trace, scale=scale)


def test_shared_helios_month():
    path = shared_fixture("traces", "helios-earth-vc6YE-2020-05.csv")
    trace = read_trace(path)
    assert trace.fmt == "helios" and len(trace) == 44640 and trace.step == 60.0
    # The first row of the file: 160 GPUs of >= 8-GPU jobs and 2 of smaller ones running, none pending.
    assert (trace.gang_gpus[0], trace.small_gpus[0]) == (160, 2)
    assert os.path.basename(trace.source) == "helios-earth-vc6YE-2020-05.csv"
