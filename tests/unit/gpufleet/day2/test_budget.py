"""The disruption budget: counts and percents, spent-first, never exceeded, stable order."""
import itertools

import pytest

from gpufleet.day2.budget import Candidate, allowed, select
from gpufleet.day2.model import severity_of


@pytest.mark.parametrize("budget,size,expected", [
    ("10%", 100, 10), ("10%", 5, 1), ("10%", 11, 2), ("10%", 10, 1), ("10%", 0, 0),
    ("100%", 7, 7), ("33.3%", 3, 1), (0, 50, 0), (3, 50, 3), (3, 2, 3),
])
def test_allowed(budget, size, expected):
    assert allowed(budget, size) == expected


def _cands(n, pool="p", severity=2):
    return [Candidate(f"{pool}-{i:02d}", pool, severity, 1000.0 + i) for i in range(n)]


@pytest.mark.parametrize("budget,size,out,candidates,started", [
    ("10%", 20, 0, 5, 2),
    ("10%", 20, 1, 5, 1),
    ("10%", 20, 2, 5, 0),
    ("10%", 20, 5, 5, 0),     # already over (a budget lowered mid-flight): nothing more
    (0, 20, 0, 5, 0),          # frozen
    (4, 20, 1, 2, 2),
])
def test_budget_never_exceeded(budget, size, out, candidates, started):
    sel = select(_cands(candidates), {"p": budget}, {"p": size}, {"p": out})
    assert len(sel.start) == started
    assert len(sel.start) + len(sel.held) == candidates
    assert out + len(sel.start) <= max(allowed(budget, size), out)


def test_most_severe_then_longest_waiting_whatever_the_input_order():
    cands = [Candidate("a", "p", 2, 50.0), Candidate("b", "p", 0, 90.0),
             Candidate("c", "p", 2, 10.0), Candidate("d", "p", 3, 1.0)]
    for perm in itertools.permutations(cands):
        sel = select(perm, {"p": 3}, {"p": 30}, {})
        assert [c.node for c in sel.start] == ["b", "c", "a"]
        assert [c.node for c, _ in sel.held] == ["d"]


def test_pools_are_separate_and_unknown_pool_is_held():
    cands = _cands(3, "p") + _cands(3, "q") + _cands(1, "x")
    sel = select(cands, {"p": 1, "q": "100%"}, {"p": 10, "q": 3}, {"q": 1})
    assert sorted(c.node for c in sel.start) == ["p-00", "q-00", "q-01"]
    reasons = {c.node: why for c, why in sel.held}
    assert "no disruption budget" in reasons["x-00"]
    assert "is spent" in reasons["p-01"]


def test_renewal_never_goes_ahead_of_a_fault():
    cands = [Candidate("old", "p", severity_of("renewal"), 0.0),
             Candidate("odd", "p", severity_of("some_new_kind"), 50.0),
             Candidate("sick", "p", severity_of("slurm_drain"), 99.0)]
    sel = select(cands, {"p": 2}, {"p": 10}, {})
    assert [c.node for c in sel.start] == ["sick", "odd"]
