"""``gpufleet simulate`` end to end on small files: table, JSON, PNG, sweep, and errors."""
import contextlib
import json
import signal

import pytest

from gpufleet.main import main

POLICY = """version: 1
pools:
  gpu:
    sku: h100
    gpus_per_node: 8
    members: {patterns: ["gpu-*"]}
    floors: {hot: 1}
    idle_time: 10m
"""


@pytest.fixture
def files(tmp_path):
    trace = tmp_path / "demand.csv"
    trace.write_text("time,gpus\n" + "".join("%d,%d\n" % (60 * i, 8 * (i % 5)) for i in range(60)))
    policy = tmp_path / "floors.yml"
    policy.write_text(POLICY)
    latency = tmp_path / "lat.yml"
    latency.write_text("preset: lab\nseed: 3\n")
    return tmp_path, str(trace), str(policy), str(latency)


def test_table_json_plot_and_sweep(files, capsys):
    tmp, trace, policy, latency = files
    out_json, out_png = str(tmp / "r.json"), str(tmp / "r.png")
    rc = main(["simulate", "--trace", trace, "--policy", policy, "--latency", latency, "--nodes", "6",
               "--sweep", "pools.gpu.floors.hot=0:2:1", "--targets", "1000,0", "--json-file", out_json,
               "--plot", out_png,
               "--set", "pools.gpu.idle_time=30m"])
    assert rc == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].startswith("policy") and "floors" in text and "smallest pools.gpu.floors.hot" in text
    doc = json.load(open(out_json))
    assert doc["trace"]["samples"] == 60 and doc["nodes"] == 6 and doc["latency"]["preset"] == "lab"
    assert [p["value"] for p in doc["sweep"]["points"]] == [0, 1, 2]
    assert [t["target"] for t in doc["tradeoff"]] == [1000.0, 0.0]
    assert doc["runs"][0]["metrics"]["partial_starts"] == 0
    assert doc["runs"][0]["overrides"] == {"pools.gpu.idle_time": "30m"}
    # A shortfall target met by a swept value names the smallest such value.
    met = [p["value"] for p in doc["sweep"]["points"] if p["metrics"]["shortfall_gpu_minutes"] <= 1000.0]
    assert doc["tradeoff"][0]["value"] == (min(met) if met else None)
    with open(out_png, "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"


def test_bad_policy_field_is_named(files, capsys):
    tmp, trace, policy, _ = files
    bad = tmp / "bad.yml"
    bad.write_text(POLICY.replace("floors: {hot: 1}", "floors: {hot: -1}"))
    assert main(["simulate", "--trace", trace, "--policy", str(bad), "--nodes", "4"]) == 1
    assert "pools.gpu.floors.hot" in capsys.readouterr().err


def test_bad_trace_line_is_named(files, capsys):
    tmp, _, policy, _ = files
    bad = tmp / "bad.csv"
    bad.write_text("time,gpus\n0,8\n60,eight\n")
    assert main(["simulate", "--trace", str(bad), "--policy", policy, "--nodes", "4"]) == 1
    assert "bad.csv line 3 column gpus: 'eight' is not a number" in capsys.readouterr().err


def test_gpus_per_node_must_match_the_pool(files, capsys):
    _, trace, policy, _ = files
    assert main(["simulate", "--trace", trace, "--policy", policy, "--nodes", "4", "--gpus-per-node", "4"]) == 1
    assert "pools.gpu.gpus_per_node (8)" in capsys.readouterr().err


def test_demand_before_from_is_the_forecast_history(files):
    _, trace, policy, _ = files
    import argparse
    from gpufleet.commands.simulate import register, simulate
    parser = argparse.ArgumentParser()
    register(parser)
    doc, results, _ = simulate(parser.parse_args(["--trace", trace, "--policy", policy, "--nodes", "6", "--from", "600"]))
    assert doc["trace"]["prior_samples"] == 10 and doc["trace"]["samples"] == 50


@contextlib.contextmanager
def _deadline(seconds=120):
    """Turns a hang (a trace time of 1e300 once replayed for ever) into a failure; never a timing check."""
    def hung(signum, frame):
        raise AssertionError("gpufleet simulate still ran after %d s" % seconds)
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _refused(capsys, argv):
    """Runs ``gpufleet simulate``; returns its one-line error (the command must exit 1)."""
    with _deadline():
        assert main(["simulate"] + argv) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpufleet simulate: error: "), lines
    return lines[0]


@pytest.fixture
def no_run(monkeypatch):
    """A run that starts fails the test: flags and outputs are checked before any run."""
    from gpufleet.simulate import compare

    def run_policy(*args, **kwargs):
        raise AssertionError("the simulation started before its flags were checked")
    monkeypatch.setattr(compare, "run_policy", run_policy)


@pytest.mark.parametrize("flags, words", [
    (["--nodes", "0"], "--nodes 0: give the number of nodes in the simulated pool, 1 to 100000"),
    (["--nodes", "100001"], "--nodes 100001: give the number of nodes"),
    (["--nodes", "4", "--scale", "nan"], "--scale nan: give a demand multiplier above 0"),
    (["--nodes", "4", "--scale=-1"], "--scale -1.0: give a demand multiplier above 0"),
    (["--nodes", "4", "--scale", "0"], "--scale 0.0: give a demand multiplier above 0"),
    (["--nodes", "4", "--interval", "nan"], "--interval nan: give the controller tick in seconds"),
    (["--nodes", "4", "--gpus-per-node", "0"], "--gpus-per-node 0: give the GPUs of one node"),
    (["--nodes", "4", "--from", "nan"], "--from: time 'nan' is not a time between 1970-01-01 and 9999-12-31"),
    (["--nodes", "4", "--to", "1e300"], "--to: time '1e300' is not a time between"),
    (["--nodes", "4", "--sweep", "pools.gpu.floors.hot=0:100000000:1"],
     "gives 100000001 values; a sweep runs at most 1000"),
    (["--nodes", "4", "--sweep", "pools.gpu.floors.hot=0:2:1", "--targets", "x"], "--targets 'x': give shortfall"),
    (["--nodes", "4", "--sweep", "pools.gpu.floors.hot=0:2:1", "--targets", "nan"], "--targets 'nan'"),
])
def test_flags_out_of_bounds_are_refused_before_the_run(files, capsys, no_run, flags, words):
    _, trace, policy, _ = files
    assert words in _refused(capsys, ["--trace", trace, "--policy", policy] + flags)


@pytest.mark.parametrize("flag", ["--json-file", "--plot"])
def test_output_into_a_missing_folder_is_refused_before_the_run(files, capsys, no_run, flag):
    tmp, trace, policy, _ = files
    target = str(tmp / "missing" / "out")
    error = _refused(capsys, ["--trace", trace, "--policy", policy, "--nodes", "4", flag, target])
    assert "%s %s: the folder %s does not exist. Create it" % (flag, target, tmp / "missing") in error


def test_output_that_is_a_folder_is_refused(files, capsys, no_run):
    tmp, trace, policy, _ = files
    error = _refused(capsys, ["--trace", trace, "--policy", policy, "--nodes", "4", "--json-file", str(tmp)])
    assert "--json-file %s is a folder. Give a file path" % tmp in error


def test_a_failed_json_write_leaves_no_file(files, capsys, monkeypatch):
    tmp, trace, policy, _ = files
    out_json = tmp / "r.json"
    out_json.write_text("the previous run's results\n")

    def dump(document, handle, **kwargs):
        handle.write('{"trace": ')                 # a partial document, then the disk is full
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(json, "dump", dump)
    error = _refused(capsys, ["--trace", trace, "--policy", policy, "--nodes", "4", "--json-file", str(out_json)])
    assert "--json-file %s: cannot write it (No space left on device)" % out_json in error
    assert out_json.read_text() == "the previous run's results\n"     # untouched, not half-written
    assert sorted(p.name for p in tmp.iterdir()) == ["demand.csv", "floors.yml", "lat.yml", "r.json"]


@pytest.mark.parametrize("row, words", [
    ("60,nan", "line 3 column gpus: 'nan' is not a whole number >= 0"),
    ("60,1e20", "line 3 column gpus: '1e20' is above the simulator's bound of 1000000 per sample"),
    ("1e300,8", "line 3 column time: time '1e300' is not a time between 1970-01-01 and 9999-12-31"),
    ("inf,8", "line 3 column time: time 'inf' is not a time between"),
])
def test_trace_values_out_of_bounds_name_the_row(files, capsys, row, words):
    tmp, _, policy, _ = files
    bad = tmp / "bad.csv"
    bad.write_text("time,gpus\n0,8\n%s\n" % row)
    assert words in _refused(capsys, ["--trace", str(bad), "--policy", policy, "--nodes", "4"])


def test_a_key_written_twice_in_the_policy_is_refused_with_and_without_overrides(files, capsys):
    tmp, trace, _, _ = files
    bad = tmp / "twice.yml"
    bad.write_text(POLICY.replace("floors: {hot: 1}", "floors: {hot: 1}\n    floors: {hot: 4}"))
    for extra in ([], ["--set", "pools.gpu.idle_time=30m"]):
        assert main(["simulate", "--trace", trace, "--policy", str(bad), "--nodes", "4"] + extra) == 1
        err = capsys.readouterr().err
        assert "(file) line 8: key 'floors' appears twice (first on line 7); fix: keep one of the two keys" in err


def test_a_set_value_with_a_key_twice_or_bad_yaml_is_refused(files, capsys):
    _, trace, policy, _ = files
    for value, words in (("pools.gpu.floors={hot: 1, hot: 4}", "key 'hot' appears twice"),
                         ("pools.gpu.floors=[", "not valid YAML")):
        assert main(["simulate", "--trace", trace, "--policy", policy, "--nodes", "4", "--set", value]) == 1
        err = capsys.readouterr().err.strip()
        assert err.startswith("gpufleet simulate: error: --set %s line 1: %s" % (value, words)) and "\n" not in err, err


def test_json_flag_prints_the_document_alone_on_stdout(files, capsys):
    tmp, trace, policy, latency = files
    out_json = str(tmp / "r.json")
    rc = main(["simulate", "--trace", trace, "--policy", policy, "--latency", latency, "--nodes", "6", "--json",
               "--json-file", out_json])
    captured = capsys.readouterr()
    assert rc == 0
    doc = json.loads(captured.out)                    # nothing but the JSON document on stdout
    assert doc["nodes"] == 6 and doc["runs"] and doc == json.load(open(out_json))
    assert "json: %s" % out_json in captured.err


def test_json_with_a_path_writes_the_document_there_and_keeps_the_tables(files, capsys):
    tmp, trace, policy, latency = files
    out_json = tmp / "out.json"
    rc = main(["simulate", "--trace", trace, "--policy", policy, "--latency", latency, "--nodes", "6",
               "--json", str(out_json)])
    captured = capsys.readouterr()
    assert rc == 0
    doc = json.loads(out_json.read_text())
    assert doc["nodes"] == 6 and doc["runs"]
    assert "json: %s" % out_json in captured.out
    with pytest.raises(ValueError):
        json.loads(captured.out)                      # the tables, not the document, on stdout


def test_json_with_a_path_and_another_json_file_is_refused(files, capsys):
    tmp, trace, policy, _ = files
    rc = main(["simulate", "--trace", trace, "--policy", policy, "--nodes", "4", "--json", str(tmp / "a.json"),
               "--json-file", str(tmp / "b.json")])
    err = capsys.readouterr().err
    assert rc == 1 and "--json %s and --json-file %s name two files" % (tmp / "a.json", tmp / "b.json") in err
    assert not (tmp / "a.json").exists() and not (tmp / "b.json").exists()


@pytest.mark.parametrize("text, seconds", [("90", 90.0), ("1m30s", 90.0), ("0", 0.0), ("1h", 3600.0)])
def test_interval_takes_seconds_or_a_compound_duration(files, monkeypatch, text, seconds):
    from gpufleet.simulate import compare
    seen = []

    def run_policy(trace, run, factory, nodes, **options):
        seen.append(options["interval"])
        raise KeyboardInterrupt   # stop after the flags are read: the interval is what is tested
    monkeypatch.setattr(compare, "run_policy", run_policy)
    _, trace, policy, _ = files
    assert main(["simulate", "--trace", trace, "--policy", policy, "--nodes", "4", "--interval", text]) == 130
    assert seen == [seconds]


@pytest.mark.parametrize("text", ["2h30", "-5m", "1.5.2h", "h"])
def test_a_bad_interval_duration_is_one_line_naming_it(files, capsys, no_run, text):
    _, trace, policy, _ = files
    error = _refused(capsys, ["--trace", trace, "--policy", policy, "--nodes", "4", "--interval=" + text])
    assert "--interval %s: give the controller tick in seconds >= 0 or as a duration like" % text in error


HELIOS_HEADER = ("time,total_gpu_num,running_gpu_num,pending_gpu_num,running_gpu_num_noless_8,running_gpu_num_less_8,"
                 "pending_gpu_num_noless_8,pending_gpu_num_less_8\n")


def test_defaults_policy_and_nodes_from_the_trace(tmp_path, capsys):
    # no --policy, no --nodes: the shipped default policy (8-GPU nodes) and 40 GPUs / 8 = 5 nodes
    trace = tmp_path / "helios.csv"
    trace.write_text(HELIOS_HEADER + "".join("2020-05-01 00:%02d:00,40,0,0,%d,0,0,%d\n" % (i, 16 if i % 7 else 0, i % 3)
                                             for i in range(30)))
    rc = main(["simulate", "--trace", str(trace), "--latency", "lab", "--json"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["nodes"] == 5 and doc["nodes_from"] == "trace"
    assert doc["runs"][0]["policy"].endswith("gpufleet/simulate/default_policy.yml")
    metrics = doc["runs"][0]["metrics"]
    for key in ("powered_off_nodes_mean", "shortfall_node_minutes", "shortfall_node_intervals", "shortfall_intervals",
                "power_changes_per_day", "idle_powered_node_hours", "powered_used_rate", "wakes_within_60s_of_park",
                "powered_off_fraction", "powered_count_change_intervals_per_day"):
        assert key in metrics
    intervals = doc["runs"][0]["intervals"]
    assert intervals["start"] == [trace_start(doc), trace_start(doc) + 600, trace_start(doc) + 1200]
    assert sum(intervals["power_changes"]) == metrics["power_ons"] + metrics["power_offs"]


def trace_start(doc):
    return doc["trace"]["from"]


def test_nodes_needed_when_the_trace_has_no_pool_size(files, capsys):
    _, trace, policy, latency = files
    assert main(["simulate", "--trace", trace, "--policy", policy, "--latency", latency]) == 1
    err = capsys.readouterr().err
    assert "--nodes" in err and "Traceback" not in err


def test_a_floor_above_the_pool_warns(files, capsys):
    tmp, trace, policy, latency = files
    rc = main(["simulate", "--trace", trace, "--policy", policy, "--latency", latency, "--nodes", "2",
               "--set", "pools.gpu.floors.hot=3", "--json"])
    assert rc == 0
    captured = capsys.readouterr()
    assert "warning:" in captured.err and "exceed the pool's 2 node(s)" in captured.err
    assert len(json.loads(captured.out)["policy_warnings"]) == 1
