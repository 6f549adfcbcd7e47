"""Smoke run of the benchmark harness on 2 racks x 2 systems (the real run is `make bench-redfish`).

Proves every method does the whole job (media inserted, one-time PXE set, power on landed,
for every node) and that the harness reports; asserts no timing.
"""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT, need
from tests.integration.redfish.lab_fixture import free_port

pytestmark = pytest.mark.integration


def test_bench_harness_smoke(tmp_path):
    need(importlib.util.find_spec("sushy_tools") is not None, "sushy-tools is not installed")
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "benchmarks", "redfish", "bench.py"), "--racks", "2",
         "--nodes-per-rack", "2", "--subset", "2", "--methods", "a,a3,b,c,d,d3",
         "--workdir", str(tmp_path / "work"), "--out", str(out), "--network", "127.0.11.",
         "--first-address", "21", "--port", str(free_port("127.0.11.21"))],
        capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = dict((r["method"], r) for r in json.loads(out.read_text())["results"])
    assert set(results) == {"a", "a3", "b", "c", "d", "d3"}
    for method, result in results.items():
        verified = result["verified"]
        assert verified["media"] == verified["power_on"] == verified["boot_pxe"] == result["nodes"]
    assert results["c"]["nodes"] == 2 and results["a"]["nodes"] == 4
    assert results["a"]["requests"] == results["d"]["requests"]  # (d) replays (a)'s calls
    assert results["a3"]["requests"] == results["d3"]["requests"]
    assert results["a"]["requests"] == results["b"]["requests"]  # same module, per host
    # One session for the three steps: 12 requests per node against the lab's 21.
    assert (results["a"]["requests_per_node"], results["a3"]["requests_per_node"]) == (12.0, 21.0)
