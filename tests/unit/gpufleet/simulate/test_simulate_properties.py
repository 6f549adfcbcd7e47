"""Bad input at volume (hypothesis) for ``gpufleet simulate``: its trace reader and its flags.

Inputs: short traces in the ``gpus``, ``nodes`` and ``helios`` formats (and empty ones: a bare
header, a zero-byte file) whose cells are small whole numbers or anything else (negative,
fractional, NaN, infinities, 1e20, 1e300, text), whose times may be NaN, infinite, far in the
future, before 1970 or years apart; with ``--nodes``, ``--scale``, ``--interval``, ``--from``
and ``--json-file`` drawn the same way (a ``--json-file`` into a missing folder among them).

Property: the command returns 0 (a table, and a whole JSON file when asked) or 1 with one line
"gpufleet simulate: error: ..." that names the trace file or the flag, never raises, and leaves
no partial or temporary file. Every value an oracle in this test calls out of bounds gives 1.
A run is bounded: a generous alarm turns a hang into a failure, and an address-space limit
turns a runaway allocation (a demand of 1e20 GPUs once asked for 5 GB) into one.
Counts: ``EXAMPLES`` inputs (GPUFLEET_HYPOTHESIS_EXAMPLES changes it), derandomized; the last
test prints how many were tried and how each ended (docs/reliability.md quotes them).
"""
import contextlib
import io
import json
import math
import os
import resource
import signal
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.main import main
from gpufleet.simulate.fleet import MAX_NODES
from gpufleet.simulate.trace import MAX_GPUS, MAX_SPAN_DAYS, MAX_TIME
from tests.unit.gpufleet.commands.test_simulate import POLICY  # the one small policy of the simulate tests
from tests.unit.gpufleet.parser_once import parser_built_once

EXAMPLES = int(os.environ.get("GPUFLEET_HYPOTHESIS_EXAMPLES", "300"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
TRIED = {}                  # what the example spoiled -> {"ran": n, "refused": n}
RUN_LIMIT_S = 120           # a hang becomes a failure; a run here takes well under a second
MEMORY_HEADROOM = 2 << 30   # bytes of address space one run may add

HELIOS = ("time,running_gpu_num,pending_gpu_num,running_gpu_num_noless_8,pending_gpu_num_noless_8,"
          "running_gpu_num_less_8,pending_gpu_num_less_8")
HEADERS = {"gpus": "time,gpus", "nodes": "time,active,total", "helios": HELIOS}
CELLS = {"gpus": 1, "nodes": 2, "helios": 6}
READ = {"gpus": (1,), "nodes": (1, 2), "helios": (3, 4, 5, 6)}     # the cells the reader uses (helios: the splits)
FLAGS = ("--nodes", "--scale", "--interval", "--from", "--json-file")

# Bad cells and times by family (a valid trace has cells 0..16 and increasing times from 1 s).
CELLS_BAD = {
    "cell not finite": st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e400"]),
    "cell huge": st.one_of(st.sampled_from(["1e20", "1e300", "%d" % (MAX_GPUS + 1)]),
                           st.integers(MAX_GPUS + 1, 10 ** 30).map(str)),
    "cell other": st.one_of(st.sampled_from(["-0", "0.5", "", "x", "8e0", "1_0", " 3 "]),
                            st.integers(-10 ** 6, -1).map(str), st.floats(-100, 100).map(repr)),
}
TIMES_BAD = {
    "time not finite": st.sampled_from(["nan", "inf", "-inf", "Infinity", "1e400"]),
    "time out of range": st.sampled_from(["1e300", "-60", "%d" % (MAX_TIME + 1), "0001-01-01T00:00:00+05:00",
                                          "9999-12-31T23:59:59", "%d" % ((MAX_SPAN_DAYS + 1) * 86400)]),
    "time other": st.sampled_from(["yesterday", "", "2020-05-01 00:00:00", "%d" % (MAX_SPAN_DAYS * 86400), "0"]),
}
NODES = st.one_of(st.integers(-3, 0), st.sampled_from([MAX_NODES + 1, 10 ** 9]))
SCALES = st.one_of(st.sampled_from(["0", "-1", "nan", "inf", "-inf", "1e300", "1e-300"]), st.floats(-10, 10).map(repr))
INTERVALS = st.sampled_from(["-1", "nan", "inf", "-inf", "0.5"])
FROMS = st.sampled_from(["nan", "inf", "1e300", "-1", "2020-05-01", "x"])
JSONS = st.sampled_from([os.path.join("missing", "out.json"), "."])
# What one example spoils: one cell, one time, one flag, the whole trace, or everything at once.
FAULTS = ("none", "none") + tuple(CELLS_BAD) + tuple(TIMES_BAD) + (
    "empty", "nodes", "scale", "interval", "from", "json", "everything")
VALID = {"nodes": st.integers(1, 6).map(str), "scale": st.sampled_from(["1", "0.5", "3"]),
         "interval": st.sampled_from([None, "0", "10"]), "from": st.sampled_from([None, "120"]),
         "json": st.sampled_from([None, "out.json"])}
BAD = {"nodes": NODES.map(str), "scale": SCALES, "interval": INTERVALS, "from": FROMS, "json": JSONS}


def _number(text):
    try:
        return float(text)
    except ValueError:
        return None


def _count_out_of_bounds(text):
    value = _number(text)
    return value is None or not math.isfinite(value) or value < 0 or value != int(value) or value > MAX_GPUS


def _time_out_of_bounds(text):
    value = _number(text)
    return value is not None and not (math.isfinite(value) and 0 <= value <= MAX_TIME)


def _trace(draw, fault):
    """(format, lines): a short valid trace with one cell or time spoiled, or an empty one."""
    fmt = draw(st.sampled_from(sorted(HEADERS)))
    if fault == "empty" or (fault == "everything" and draw(st.booleans())):
        return fmt, draw(st.sampled_from([[], [HEADERS[fmt]]]))
    rows, when = [], 0
    for _ in range(draw(st.integers(1, 5))):
        when += draw(st.sampled_from([1, 60, 3600]))
        rows.append([str(when)] + [draw(st.integers(0, 16).map(str)) for _ in range(CELLS[fmt])])
        if fmt == "nodes":
            rows[-1][2] = "16"
    if fault in CELLS_BAD or fault in TIMES_BAD:
        spoiled = [(draw(st.integers(0, len(rows) - 1)), fault)]
    elif fault == "everything":
        spoiled = [(r, draw(st.sampled_from(sorted(CELLS_BAD) + sorted(TIMES_BAD))))
                   for r in range(len(rows)) if draw(st.booleans())]
    else:
        spoiled = []
    for row, family in spoiled:
        if family in TIMES_BAD:
            rows[row][0] = draw(TIMES_BAD[family])
        else:
            rows[row][draw(st.integers(1, CELLS[fmt]))] = draw(CELLS_BAD[family])
    return fmt, [HEADERS[fmt]] + [",".join(row) for row in rows]


def _trace_out_of_bounds(fmt, lines):
    if len(lines) < 2:
        return True
    rows = [line.split(",") for line in lines[1:]]
    return any(_time_out_of_bounds(row[0]) or any(_count_out_of_bounds(row[i]) for i in READ[fmt]) for row in rows)


def _flags_out_of_bounds(flags):
    nodes, scale = int(flags["nodes"]), _number(flags["scale"])
    interval, start = _number(flags["interval"] or "0"), _number(flags["from"] or "0")
    return (not 1 <= nodes <= MAX_NODES
            or not (scale is not None and math.isfinite(scale) and scale > 0)
            or not (interval is not None and math.isfinite(interval) and interval >= 0)
            or (start is not None and not (math.isfinite(start) and 0 <= start <= MAX_TIME))
            or flags["json"] in (os.path.join("missing", "out.json"), "."))


@contextlib.contextmanager
def _bounded():
    """An alarm and an address-space limit around one run; both restored after it."""
    def hung(signum, frame):
        raise TimeoutError("gpufleet simulate ran past %d s" % RUN_LIMIT_S)

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as handle:
        used = int(handle.read().split()[0]) * resource.getpagesize()
    limit = used + MEMORY_HEADROOM if hard == resource.RLIM_INFINITY else min(hard, used + MEMORY_HEADROOM)
    previous = signal.signal(signal.SIGALRM, hung)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    signal.alarm(RUN_LIMIT_S)
    try:
        yield
    finally:
        signal.alarm(0)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        signal.signal(signal.SIGALRM, previous)


def _simulate(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), parser_built_once(), _bounded():
        rc = main(["simulate"] + argv)
    return rc, out.getvalue(), err.getvalue()


def _check_outcome(rc, out, err, trace_path, json_path, refused):
    assert rc in (0, 1), (rc, err)
    if rc == 0:
        assert not refused, ("a value out of bounds was accepted", out)
        assert out.splitlines()[0].startswith("policy"), out
        if json_path:
            with open(json_path) as handle:
                assert json.load(handle)["runs"], json_path
        return "ran"
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpufleet simulate: error: "), err
    assert trace_path in err or any(flag in err for flag in FLAGS), err
    assert not json_path or not os.path.exists(json_path), "a failed run left %s" % json_path
    return "refused"


def _flag(data, name, fault):
    """A flag's value: out of bounds when the example spoils it, else a quick valid one."""
    spoiled = fault == name or (fault == "everything" and data.draw(st.booleans()))
    return data.draw(BAD[name] if spoiled else VALID[name])


@SETTINGS
@given(st.data())
def _any_trace_and_flags_end_cleanly(data):
    fault = data.draw(st.sampled_from(FAULTS))
    fmt, lines = _trace(data.draw, fault)
    flags = {name: _flag(data, name, fault) for name in VALID}
    with tempfile.TemporaryDirectory() as folder:
        trace_path, policy_path = os.path.join(folder, "demand.csv"), os.path.join(folder, "policy.yml")
        with open(trace_path, "w") as handle:
            handle.write("\n".join(lines) + ("\n" if lines else ""))
        with open(policy_path, "w") as handle:
            handle.write(POLICY)
        argv = ["--trace", trace_path, "--policy", policy_path, "--latency", "lab", "--nodes", flags["nodes"],
                "--scale=" + flags["scale"]]
        argv += ["--format", fmt] if data.draw(st.booleans()) else []
        argv += ["--interval=" + flags["interval"]] if flags["interval"] is not None else []
        argv += ["--from=" + flags["from"]] if flags["from"] is not None else []
        json_path = os.path.join(folder, flags["json"]) if flags["json"] else None
        argv += ["--json-file", json_path] if json_path else []
        refused = _trace_out_of_bounds(fmt, lines) or _flags_out_of_bounds(flags)
        rc, out, err = _simulate(argv)
        ending = _check_outcome(rc, out, err, trace_path, json_path if flags["json"] != "." else None, refused)
        counts = TRIED.setdefault(fault, {"ran": 0, "refused": 0})
        counts[ending] += 1
        leftovers = [name for name in os.listdir(folder) if name.startswith(".")]
        assert not leftovers, "temporary files left: %s" % leftovers


def test_any_trace_and_flags_end_in_a_run_or_one_line_error():
    _any_trace_and_flags_end_cleanly()


def test_report_how_many_inputs_were_tried():
    """Runs last in this file: the counts quoted in docs/reliability.md."""
    tried = sum(sum(counts.values()) for counts in TRIED.values())
    print("simulate inputs tried: %d; by what was spoiled: %s" % (tried, TRIED))
    assert tried >= EXAMPLES  # the property test above really ran
