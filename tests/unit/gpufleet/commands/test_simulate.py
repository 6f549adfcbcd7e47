"""``gpufleet simulate`` end to end on small files: table, JSON, PNG, sweep, and errors."""
import json

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
               "--sweep", "pools.gpu.floors.hot=0:2:1", "--targets", "1000,0", "--json", out_json, "--plot", out_png,
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
