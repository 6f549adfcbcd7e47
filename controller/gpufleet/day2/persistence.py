"""Persistence: a signal acts only when it repeats or lasts, so a flapping node is not cycled.

A pure state machine: ``observe(state, signals, now, rule)`` takes the previous state (None at
start), this pass's signals and the pool's ``day2.persistence`` rule, and returns the new state
and the nodes actionable now. A track is one (node, source, kind); it is actionable when it was
seen ``rule.count`` times within ``rule.window``, or (``rule.duration`` set) seen on every
observation for ``rule.duration``. The controller stores the state between passes.
"""
from dataclasses import dataclass
from typing import Optional, Tuple

from gpufleet.day2.model import severity_of

__all__ = ["Track", "Actionable", "observe"]


@dataclass(frozen=True)
class Track:
    """One (node, source, kind) over time."""
    node: str
    source: str
    kind: str
    reason: str                      # the latest words
    first_seen: float                # the first sighting still remembered
    seen: Tuple[float, ...] = ()     # sightings within the window
    run_start: Optional[float] = None  # start of the current unbroken run; None: absent now


@dataclass(frozen=True)
class Actionable:
    """A node whose signals persisted: the most severe first in ``reasons``."""
    node: str
    severity: int
    first_seen: float
    reasons: Tuple[str, ...]


def _due(track, now, rule):
    if len(track.seen) >= rule.count:
        return f"seen {len(track.seen)} times within {rule.window:g}s"
    if rule.duration is not None and track.run_start is not None \
            and now - track.run_start >= rule.duration:
        return f"present for {now - track.run_start:g}s without a break"
    return None


def _advance(old, signal, now, rule):
    """One track after this pass: ``signal`` None when it was not seen."""
    horizon = now - rule.window
    seen = tuple(t for t in (old.seen if old else ()) if t > horizon)
    if signal is None:
        return Track(old.node, old.source, old.kind, old.reason, old.first_seen, seen, None) \
            if seen else None
    run_start = old.run_start if old and old.run_start is not None else \
        min(float(now), signal.first_seen)
    first = min(old.first_seen, signal.first_seen) if old else signal.first_seen
    return Track(signal.node, signal.source, signal.kind, signal.reason, first,
                 seen + (float(now),), run_start)


def observe(state, signals, now, rule):
    """-> (new state: {key: Track}, actionable: tuple of Actionable sorted by node)."""
    state = state or {}
    current = {}
    for signal in signals:
        current.setdefault((signal.node, signal.source, signal.kind), signal)
    keys = sorted(set(state) | set(current))
    tracks = {key: _advance(state.get(key), current.get(key), now, rule) for key in keys}
    new_state = {key: track for key, track in tracks.items() if track is not None}
    return new_state, _actionable(new_state, now, rule)


def _actionable(tracks, now, rule):
    by_node = {}
    for track in tracks.values():
        why = _due(track, now, rule) if track.run_start is not None else None
        if why:
            by_node.setdefault(track.node, []).append((track, why))
    found = []
    for node in sorted(by_node):
        items = sorted(by_node[node], key=lambda item: (severity_of(item[0].kind), item[0].kind))
        found.append(Actionable(
            node, severity_of(items[0][0].kind), min(t.first_seen for t, _ in items),
            tuple(f"{t.source} {t.kind}: {t.reason} ({why})" for t, why in items)))
    return tuple(found)
