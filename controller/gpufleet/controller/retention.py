"""Retention of the controller's playbook run folders (``<state>/runs/ctl-*``).

``plan_prune`` is pure (entries, the clock, the settings -> the names to delete), so tests
drive it with a fake clock; ``scan`` reads the folder and ``prune`` deletes what the plan
names. Only the controller's own decision runs (``ctl-<decision>-<kind>[-<n>]``) are
considered: the background reads reuse one fixed folder each, and a person's ``gpufleet
run`` folders are theirs. Reports are one file per node (overwritten), so they do not grow
with the number of runs and are not pruned.

A run is pruned only when it is finished (ansible-runner wrote its final ``status``) and is
not in flight in this controller; a folder without a final status (a controller killed
mid-run: the next one resumes that decision in the same folder) is kept.
"""
import os
import re
import shutil
from dataclasses import dataclass
from typing import Optional

__all__ = ["Entry", "Retention", "plan_prune", "scan", "prune", "CONTROLLER_RUN"]

CONTROLLER_RUN = re.compile(r"^ctl-\d+-[a-z_]+(?:-\d+)?$")
_FINAL = ("successful", "failed", "timeout", "canceled")


@dataclass(frozen=True)
class Entry:
    """One run folder: its name, when it ended (or was last touched), whether it finished."""
    name: str
    at: float
    finished: bool


@dataclass(frozen=True)
class Retention:
    """Keep the newest ``keep_runs`` finished runs and/or those younger than ``keep_for`` s.
    Both None: keep everything. Both set: a run is kept when either rule keeps it."""
    keep_runs: Optional[int] = None
    keep_for: Optional[float] = None

    @property
    def enabled(self):
        return self.keep_runs is not None or self.keep_for is not None


def _in_flight(name, run_ids):
    # a run of several playbooks writes <run id>, then <run id>-1, ...: all belong to it
    return any(name == rid or name.startswith(rid + "-") for rid in run_ids)


def plan_prune(entries, now, retention, in_flight=()):
    """The names to delete, oldest first. Unfinished and in-flight runs are never named."""
    if not retention.enabled:
        return []
    done = sorted((e for e in entries if e.finished and CONTROLLER_RUN.match(e.name)
                   and not _in_flight(e.name, in_flight)), key=lambda e: (-e.at, e.name))
    # kept neither by count (among the newest keep_runs) nor by age (younger than keep_for)
    doomed = [e for rank, e in enumerate(done)
              if not (retention.keep_runs is not None and rank < retention.keep_runs)
              and not (retention.keep_for is not None and now - e.at < retention.keep_for)]
    return [e.name for e in sorted(doomed, key=lambda e: (e.at, e.name))]


def _entry(path, name):
    """An Entry for the run folder ``path``: finished when every artifacts/*/status is final."""
    statuses = []
    artifacts = os.path.join(path, "artifacts")
    try:
        idents = os.listdir(artifacts)
    except OSError:
        idents = []
    for ident in idents:
        status = os.path.join(artifacts, ident, "status")
        try:
            with open(status, encoding="utf-8") as handle:
                statuses.append((handle.read().strip(), os.stat(status).st_mtime))
        except OSError:
            statuses.append((None, None))
    finished = bool(statuses) and all(s in _FINAL for s, _at in statuses)
    at = max(at for _s, at in statuses) if finished else os.stat(path).st_mtime
    return Entry(name, at, finished)


def scan(runs_dir):
    """Entries for the controller's run folders under ``runs_dir`` (missing folder: none)."""
    try:
        names = sorted(os.listdir(runs_dir))
    except FileNotFoundError:
        return []
    entries = []
    for name in names:
        path = os.path.join(runs_dir, name)
        if CONTROLLER_RUN.match(name) and os.path.isdir(path) and not os.path.islink(path):
            try:
                entries.append(_entry(path, name))
            except OSError:
                continue    # vanished meanwhile
    return entries


def prune(runs_dir, now, retention, in_flight=()):
    """Delete what ``plan_prune`` names; returns (deleted names, [(name, error)])."""
    if not retention.enabled:
        return [], []
    deleted, errors = [], []
    for name in plan_prune(scan(runs_dir), now, retention, in_flight):
        try:
            shutil.rmtree(os.path.join(runs_dir, name))
            deleted.append(name)
        except OSError as exc:
            errors.append((name, exc.strerror or str(exc)))
    return deleted, errors
