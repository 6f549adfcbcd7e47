"""Tier classification from ledger state, Slurm state and gate age."""
import pytest

from gpufleet.capacity.model import BUSY, COLD, HOT, IDLE, PROVISIONING, UNAVAILABLE, WARM
from gpufleet.capacity.tiers import classify, gate_valid, slurm_flags

NOW = 1_000_000.0
DAY = 86400.0
FRESH = dict(gate_passed_at=NOW - 3600, gate_validity=DAY, now=NOW)
STALE = dict(gate_passed_at=NOW - 2 * DAY, gate_validity=DAY, now=NOW)

CASES = [
    # ledger state, slurm state, gate, extra, expected tier, words in why
    ("enrolled", None, {}, {}, COLD, "enrolled"),
    ("inspected", None, {}, {}, COLD, "inspected"),
    ("recycling", None, {}, {}, COLD, "recycling"),
    ("imaging", None, {}, {}, PROVISIONING, "imaging"),
    ("configuring", None, {}, {}, PROVISIONING, "configuring"),
    ("validating", None, {}, {}, PROVISIONING, "validating"),
    ("waking", None, {}, {}, PROVISIONING, "waking"),
    ("hot", "IDLE+DRAIN", FRESH, {}, HOT, "hot"),
    ("hot", ["IDLE", "DRAIN"], FRESH, {}, HOT, "hot"),
    ("ready", None, FRESH, {}, HOT, "ready"),
    ("hot", "IDLE+DRAIN", STALE, {}, WARM, "stale"),
    ("hot", None, {}, {}, WARM, "stale"),
    ("hot", "DOWN+DRAIN", FRESH, {}, UNAVAILABLE, "down"),
    ("hot", "idle*", FRESH, {}, UNAVAILABLE, "not_responding"),
    ("parked", None, STALE, {}, WARM, "parked"),
    ("parked", None, FRESH, {"image_version": "v1", "pool_image": "v2"}, COLD, "image v1"),
    ("parked", None, FRESH, {"image_version": "v2", "pool_image": "v2"}, WARM, "parked"),
    ("joined", "IDLE", {}, {}, IDLE, "idle"),
    ("joined", "idle", {}, {}, IDLE, "idle"),
    ("joined", "ALLOCATED", {}, {}, BUSY, "running"),
    ("joined", "MIXED", {}, {}, BUSY, "running"),
    ("joined", "IDLE", {}, {"jobs": ("42",)}, BUSY, "running"),
    ("joined", "IDLE+DRAIN", {}, {}, UNAVAILABLE, "drain"),
    ("joined", "DOWN", {}, {}, UNAVAILABLE, "down"),
    ("joined", "idle*", {}, {}, UNAVAILABLE, "not_responding"),
    ("joined", None, {}, {}, UNAVAILABLE, "does not report"),
    ("joined", "PLANNED", {}, {}, UNAVAILABLE, "not understood"),
    ("failed", None, {}, {}, UNAVAILABLE, "failed"),
    ("break_fix", None, {}, {}, UNAVAILABLE, "break_fix"),
    ("draining", None, {}, {}, UNAVAILABLE, "draining"),
    ("decommissioned", None, {}, {}, UNAVAILABLE, "decommissioned"),
    ("levitating", None, {}, {}, UNAVAILABLE, "unknown"),
]


@pytest.mark.parametrize("state,slurm,gate,extra,tier,words", CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[4]}-{i}" for i, c in enumerate(CASES)])
def test_classify(state, slurm, gate, extra, tier, words):
    got, why = classify(state, slurm, **gate, **extra)
    assert got == tier, why
    assert words in why


@pytest.mark.parametrize("passed,validity,expected", [
    (NOW - 10, 60, True), (NOW - 60, 60, True), (NOW - 61, 60, False), (None, 60, False),
    (NOW + 10, 60, False),  # a gate from the future is a clock problem: not trusted
])
def test_gate_valid(passed, validity, expected):
    assert gate_valid(passed, validity, NOW) is expected


def test_slurm_flags_forms():
    assert slurm_flags("IDLE+DRAIN") == {"idle", "drain"}
    assert slurm_flags(["MIXED", "COMPLETING"]) == {"mixed", "completing"}
    assert slurm_flags("idle*") == {"idle", "not_responding"}
    assert slurm_flags(None) == frozenset()
