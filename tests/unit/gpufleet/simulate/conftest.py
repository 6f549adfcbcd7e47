"""Shared helpers: fixed latencies (exact answers), a policy from text, a trace from lists."""
import pytest

from gpufleet.capacity.policy import parse_policy
from gpufleet.simulate.latency import Latency
from gpufleet.simulate.trace import Trace

FIXED = {"hot": {"dist": "fixed", "seconds": 5}, "warm": {"dist": "fixed", "seconds": 120},
         "cold": {"dist": "fixed", "seconds": 600}, "regate": {"dist": "fixed", "seconds": 60},
         "recycle": {"dist": "fixed", "seconds": 300}, "gate_failure": 0}

POOL = """
version: 1
fleet: {{concurrency_limit: 10, interval: 10s}}
pools:
  gpu:
    sku: h100
    gpus_per_node: 8
    members: {{patterns: ["gpu-*"]}}
{body}
"""


def policy(body):
    """A one-pool policy ("gpu") through the planner's own parser; ``body`` is indented 4."""
    return parse_policy(POOL.format(body=body), source="test")


def trace(small, gang=None, start=0.0, step=60.0):
    gang = gang or [0] * len(small)
    return Trace("test", "gpus", tuple(start + step * i for i in range(len(small))), tuple(gang), tuple(small), step)


@pytest.fixture
def fixed():
    return lambda **over: Latency(dict(FIXED, **over))
