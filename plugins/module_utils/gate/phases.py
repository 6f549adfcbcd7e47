# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Run the gate's phases in order, cheapest first, and judge every check.

attestation -> gpu -> nvlink -> fabric -> storage -> reference -> soak. Each probe in a
phase runs a tool (or reads an input), saves its raw output, parses it and judges the
checks it feeds against the profile. The gate stops at the first failed probe (the
rest of the run is reported as ``skip``) unless ``run_all`` is set. Bandwidth probes
retry up to the profile's ``retries``. The same ``judge_probe`` re-judges saved raw
outputs offline (``gpufleet gate evaluate``).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.catalog import (
    GATE_PHASES, LOCAL_CHECKS, PHASES, check_spec,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import GateError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.gpu_load import take_baseline
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.runner import EMPTY, MISSING, START_FAILED
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.results import (
    FAIL, PASS, SKIP, CheckResult, failed_closed)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.judging import judge
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.probes import PROBES, collect

__all__ = ["PHASES", "GATE_PHASES", "GateContext", "plan", "local_checks", "run_gate", "judge_probe"]


class GateContext:
    """Everything a gate run needs; ``raw_sink(key, stdout, stderr)`` saves raw output."""

    def __init__(self, profile, runner=None, options=None, raw_sink=None, clock=None, collector=None):
        self.profile = profile
        self.collector = collector or collect
        self.runner = runner
        self.options = dict(options or {})
        self.raw_sink = raw_sink or (lambda key, out, err: None)
        self.clock = clock or time.monotonic
        self.baseline = None  # gpu_load.take_baseline: counters from before the GPU phase

    def for_health(self):
        """This run with the profile's health section as its profile (DCGM at level 1)."""
        return GateContext(self.profile.for_health(), self.runner, self.options, self.raw_sink, self.clock,
                           self.collector)

    def opt(self, key, default=None):
        value = self.options.get(key)
        return default if value is None else value

    def timeout(self, probe):
        return int(dict(self.opt("timeouts", {})).get(probe, self.opt("default_timeout", 600)))

    def threshold(self, check):
        return self.profile.threshold(check) if self.profile.has(check) else None

    def param(self, check, key, default=None):
        """A check parameter from the profile, ``default`` when the profile has no such check or key."""
        threshold = self.threshold(check)
        value = threshold.param(key) if threshold is not None else None
        return default if value is None else value


def _wanted(probe, profile, waived, local):
    return tuple(c for c in probe.checks if (c in local or profile.has(c)) and c not in waived)


def _check_waivers(profile, waived):
    unknown = [c for c in waived if c not in LOCAL_CHECKS and not profile.has(c)]
    if unknown:
        raise GateError("skip_checks names %s, which profile %s does not have. Use check names from the profile: "
                        "%s." % (", ".join(unknown), profile.name, ", ".join(n for n, _t in profile.checks)),
                        skip_checks=unknown)


def local_checks(options):
    """Gate-judged checks that run: the image release always, the TPM quote when asked for."""
    return ("image_release",) + (("tpm_quote",) if (options or {}).get("tpm_quote") else ())


def plan(profile, phases=None, waived=(), local=("image_release",)):
    """Ordered (phase, [(probe, checks)]) for the selected phases; unknown phases or waivers raise.

    No phases: the whole acceptance gate (not ``health``). ``health`` runs the GPU probes for the
    checks of the profile's health section only, without the gate-judged local checks."""
    chosen = list(phases or GATE_PHASES)
    unknown = [p for p in chosen if p not in PHASES]
    if unknown:
        raise GateError("Unknown gate phase(s) %s. Choose from: %s." % (", ".join(unknown), ", ".join(PHASES)),
                        phases=unknown)
    _check_waivers(profile, waived)
    out = []
    for phase in PHASES:
        if phase not in chosen:
            continue
        if phase == "health":
            health = profile.for_health()
            # the probes that feed the health checks, in the gate's order (the catalog's phases)
            probes = [(p, _wanted(p, health, waived, ())) for p in PROBES]
            out.append((phase, [(p, c) for p, c in probes if c]))
            continue
        probes = [(p, _wanted(p, profile, waived, local)) for p in PROBES if p.phase == phase]
        out.append((phase, [(p, c) for p, c in probes if c]))
    return out


def judge_probe(probe, checks, texts, ctx):
    """Judge ``checks`` from a probe's raw texts ({suffix: stdout}); never raises for bad output."""
    try:
        values = probe.extract(texts, ctx)
    except GateError as exc:
        return [_closed(ctx, c, probe.phase, "%s: %s" % (c, exc.msg)) for c in checks]
    results = []
    for check in checks:
        value = values.get(check)
        if isinstance(value, CheckResult):
            results.append(value)
        elif value is None:
            results.append(_closed(ctx, check, probe.phase, "%s: the %s output did not report it" % (
                check, probe.name)))
        else:
            measured, details = value
            results.append(judge(check, measured, ctx.profile, details))
    return results


def _prefixed(check, reason):
    """``<check>: <reason>``, without repeating the name when the probe is named after the check."""
    return reason if reason.startswith(check + ": ") else "%s: %s" % (check, reason)


def _closed(ctx, check, phase, reason):
    """A failed check with nothing measured, showing the profile's threshold when there is one."""
    threshold = ctx.threshold(check)
    if threshold is None:
        return failed_closed(check, phase, reason)
    return failed_closed(check, phase, reason, threshold=threshold.limit, unit=threshold.unit)


def _attempts(probe, checks, ctx):
    if ctx.opt("replay"):
        return 1
    retries = [ctx.threshold(c).retries for c in checks if ctx.threshold(c) is not None]
    return 1 + (max(retries) if retries and probe.retryable else 0)


def _run_failure(probe, run):
    """Why a run yields no measurement: the runner's error, or a non-zero exit the tool means as failure."""
    if run.error == EMPTY and probe.empty_is_output and run.rc == 0:
        return None  # the extractor says what printing nothing means
    if run.error:
        return run.reason
    if run.rc not in (0, None) and probe.rc_is_verdict:
        tail = (run.stderr or run.stdout or "").strip()[-300:]
        return "%s exited with status %s: %s" % (run.probe, run.rc, tail or "no message")
    return None


def run_probe(probe, checks, ctx):
    """Run (with bounded retries) and judge one probe; return (results, extra details per check)."""
    attempts = _attempts(probe, checks, ctx)
    for attempt in range(1, attempts + 1):
        runs = ctx.collector(probe, ctx)
        failures = [why for why in (_run_failure(probe, r) for r in runs) if why]
        texts = dict((suffix, r.stdout) for suffix, r in ((r.probe.partition(".")[2], r) for r in runs))
        # A tool that never started leaves no raw file: an empty one would read as "ran, printed nothing".
        raw = [ctx.raw_sink(r.probe, r.stdout, r.stderr) for r in runs
               if r.stdout or r.stderr or r.error not in (MISSING, START_FAILED)]
        if failures:
            reason = "; ".join(failures)
            results = [_closed(ctx, c, probe.phase, _prefixed(c, reason)) for c in checks]
        else:
            results = judge_probe(probe, checks, texts, ctx)
        if all(r.verdict == PASS for r in results):
            break
    meta = {"attempts": attempt, "raw": [r for r in raw if r],
            "runs": [{"argv": r.argv, "rc": r.rc, "duration_s": round(r.duration, 3), "error": r.error}
                     for r in runs]}
    return results, dict((c, meta) for c in checks)


def _skipped(checks, phase, why):
    return [CheckResult(name=c, phase=phase, measured=None, threshold=None, unit="", verdict=SKIP, reason=why)
            for c in checks]


def _run_phase(ctx, phase, probes, outcome, stop, run_all):
    """Run one phase's probes; returns the phase entry and the stop reason (None to go on)."""
    waived = tuple(ctx.opt("skip_checks", ()))
    entry = {"name": phase, "results": [], "extra": {}, "verdict": PASS, "note": ""}
    entry["results"].extend(_skipped([c for c in waived if check_spec(c).phase == phase], phase,
                                     "waived by the caller (skip_checks); not measured"))
    started = ctx.clock()
    for probe, checks in probes:
        if stop:
            entry["results"].extend(_skipped(checks, phase, "not run: %s" % stop))
            continue
        results, extra = run_probe(probe, checks, ctx)
        entry["results"].extend(results)
        entry["extra"].update(extra)
        _record_failure(outcome, entry, results)
        if entry["verdict"] == FAIL and not run_all:
            stop = "phase %s failed (%s)" % (phase, outcome["failed_check"])
    uncovered = _uncovered(ctx.profile, phase, waived)
    if uncovered and stop:
        entry["results"].extend(_skipped(uncovered, phase, "not run: %s" % stop))
    elif uncovered:
        results = [_closed(ctx, c, phase, "%s: the gate has no probe that measures this check; remove it "
                                          "from profile %s" % (c, ctx.profile.name)) for c in uncovered]
        entry["results"].extend(results)
        _record_failure(outcome, entry, results)
    if not probes and not uncovered:
        entry["verdict"], entry["note"] = SKIP, "no checks for this phase in profile %s" % ctx.profile.name
    elif not any(r.verdict != SKIP for r in entry["results"]):
        entry["verdict"] = SKIP
    entry["duration"] = ctx.clock() - started
    return entry, stop


def run_gate(ctx, phases=None, run_all=False):
    """Run the selected phases; return the outcome mapping ``report.build_report`` reads."""
    started = ctx.clock()
    outcome = {"phases": [], "verdict": PASS, "failed_phase": None, "failed_check": None, "reason": ""}
    stop = None
    waived = tuple(ctx.opt("skip_checks", ()))
    planned = plan(ctx.profile, phases, waived, local_checks(ctx.options))
    for phase, probes in planned:
        _baseline(ctx, phase, planned, stop)
        entry, stop = _run_phase(ctx.for_health() if phase == "health" else ctx, phase, probes, outcome, stop,
                                 run_all)
        outcome["phases"].append(entry)
    _no_checks(outcome, ctx)
    outcome["duration"] = ctx.clock() - started
    return outcome


def _baseline(ctx, phase, planned, stop):
    """Read the counters soak_errors compares once, before the first phase that loads the GPUs.

    Replays (no runner) read the saved copies instead: raw/soak_errors.before_*.txt."""
    if ctx.baseline is not None or stop or phase in ("attestation", "health") or ctx.runner is None:
        return
    if any(probe.name == "soak_errors" for _phase, probes in planned for probe, _checks in probes):
        ctx.baseline = take_baseline(ctx)


def _uncovered(profile, phase, waived):
    fed = set(c for p in PROBES for c in p.checks)
    return [c for c in profile.phase_checks(phase) if c not in fed and c not in waived]


def _record_failure(outcome, entry, results):
    failed = [r for r in results if r.verdict == FAIL]
    if not failed:
        return
    entry["verdict"] = FAIL
    if outcome["verdict"] == PASS:
        outcome.update(verdict=FAIL, failed_phase=entry["name"], failed_check=failed[0].name,
                       reason=failed[0].reason)


def _no_checks(outcome, ctx):
    ran = [r for p in outcome["phases"] for r in p["results"] if r.verdict != SKIP]
    if not ran and outcome["verdict"] == PASS:
        outcome.update(verdict=FAIL, reason="no check ran: profile %s has no check in the selected phases, so "
                                            "nothing proves this node; select phases with checks" % ctx.profile.name)
