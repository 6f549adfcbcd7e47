# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The GPUs under load: clock events during gpu-burn, error counters across the soak, the NVSwitch fabric.

``clock_events``: ``nvidia-smi -q`` (cumulative clock-event counters, microseconds per
reason) before and after gpu-burn, and ``nvidia-smi --query-gpu=... -lms`` samples taken while
it runs. Time in HW slowdown, HW thermal slowdown, SW thermal slowdown or HW power brake above
the profile's limit fails, naming GPU and reason. SW power cap time is reported, never failed:
a healthy H100 at full load sits at its 700 W cap with the SM clock well under its maximum.
A reason with no counter (HW slowdown has none; drivers before the 575 series print no counters:
real 525, 550 and 570 reports have none, 575, 580 and 595 reports have them) is timed from the samples.

``soak_errors``: the volatile ECC counters, row remapping and the kernel log's XIDs read
before the GPU phase (``take_baseline``) and again after the soak, judged by their difference.

``nvswitch_fabric``: every GPU's ``Fabric`` state (driver 550+, Hopper and later) and, where
the SKU needs it, the ``nvidia-fabricmanager`` service.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import dataclasses

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.judging import judge
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.kernel_log import parse_kernel_log
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nvidia_smi import parse_nvidia_smi_csv
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nvidia_smi_xml import (
    parse_nvidia_smi_any as parse_report)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.results import FAIL

__all__ = ["COUNTER_ARGS", "SAMPLE_ARGS", "SAMPLE_INTERVAL_MS", "SLOWDOWN_REASONS", "collect_burn", "collect_window",
           "collect_fabric", "take_baseline", "clock_events", "soak_errors", "nvswitch_fabric", "reason_times"]

COUNTER_ARGS = ("-q", "-d", "PERFORMANCE,ECC,ROW_REMAPPER,CLOCK")
SAMPLE_INTERVAL_MS = 500
# The R535+ field name (driver 580 accepts both); the parser reads either generation's.
SAMPLE_ARGS = ("--query-gpu=index,clocks.sm,clocks_event_reasons.active", "--format=csv",
               "-lms", str(SAMPLE_INTERVAL_MS))
# Reasons that mean the GPU was slowed by a fault or its cooling, not by its power budget.
SLOWDOWN_REASONS = ("hw_slowdown", "hw_thermal_slowdown", "sw_thermal_slowdown", "hw_power_brake_slowdown")
_LABELS = {"hw_slowdown": "HW slowdown", "hw_thermal_slowdown": "HW thermal slowdown",
           "sw_thermal_slowdown": "SW thermal slowdown", "hw_power_brake_slowdown": "HW power brake",
           "sw_power_cap": "SW power cap"}
_FABRIC_UP = ("Completed", "Success")


# ---- collection (runs on the node) ----

def collect_burn(probe, ctx):
    """gpu-burn, with counters before and after and SM-clock samples while it runs (when judged)."""
    timeout = ctx.timeout(probe.name)
    if ctx.threshold("clock_events") is None:
        return [ctx.runner.run(probe.name, probe.tool, probe.args(ctx), timeout)]
    before = ctx.runner.run(probe.name + ".clocks_before", "nvidia-smi", list(COUNTER_ARGS), timeout)
    burn, samples = ctx.runner.run_sampled(probe.name, probe.tool, probe.args(ctx), timeout, "nvidia-smi",
                                           list(SAMPLE_ARGS), probe.name + ".clocks_samples")
    after = ctx.runner.run(probe.name + ".clocks_after", "nvidia-smi", list(COUNTER_ARGS), timeout)
    return [burn, before, samples, after]


def take_baseline(ctx):
    """The counters and kernel log before the GPU phase, for ``soak_errors`` to compare with."""
    timeout = ctx.timeout("soak_errors")
    return {"nvidia_smi": ctx.runner.run("soak_errors.before_smi", "nvidia-smi", list(COUNTER_ARGS), timeout),
            "dmesg": ctx.runner.run("soak_errors.before_dmesg", "dmesg", [], timeout)}


def collect_window(probe, ctx):
    """The baseline taken before the GPU phase and the same reads now, after the soak."""
    baseline = ctx.baseline or take_baseline(ctx)
    timeout = ctx.timeout(probe.name)
    return [baseline["nvidia_smi"], baseline["dmesg"],
            ctx.runner.run(probe.name + ".after_smi", "nvidia-smi", list(COUNTER_ARGS), timeout),
            ctx.runner.run(probe.name + ".after_dmesg", "dmesg", [], timeout)]


def collect_fabric(probe, ctx):
    runs = [ctx.runner.run(probe.name + ".nvidia_smi", "nvidia-smi", ["-q"], ctx.timeout(probe.name))]
    if ctx.param("nvswitch_fabric", "fabric_manager", True):
        runs.append(ctx.runner.run(probe.name + ".fabricmanager", "systemctl",
                                   ["is-active", "nvidia-fabricmanager.service"], ctx.timeout(probe.name)))
    return runs


# ---- clock events ----

def _complete_lines(text):
    """The sampler is stopped mid-run: its last line may be cut, so keep whole lines only."""
    text = text or ""
    return text if text.endswith("\n") else text[:text.rfind("\n") + 1]


def _labelled(text):
    """{"GPU<index>": gpu} of an ``nvidia-smi -q`` report (text or XML)."""
    return dict(("GPU%d" % g.index, g) for g in parse_report(text).gpus)


def _clock_counters(gpus):
    """{label: {reason: microseconds}} of labelled GPUs."""
    return dict((label, dict(g.clock_counters or ())) for label, g in gpus.items())


def _loaded_samples(text):
    """{GPU: [(sm MHz, {reason: active})]} for samples where the GPU was not idle."""
    body = _complete_lines(text)
    if not body.strip():
        raise ParseError("nvidia-smi sampler", "at least one sample taken during the load test",
                         why="the sampler printed nothing")
    out = {}
    for gpu in parse_nvidia_smi_csv(body).gpus:
        reasons = dict(gpu.clock_reasons or ())
        if not reasons:
            raise ParseError("nvidia-smi sampler", "clocks_event_reasons.active in every sample",
                             why="GPU%d's sample has no reason mask" % gpu.index)
        out.setdefault("GPU%d" % gpu.index, [])
        if not reasons.get("gpu_idle"):
            out["GPU%d" % gpu.index].append((gpu.sm_clock_mhz, reasons))
    return out


def reason_times(before, after, samples, interval_us):
    """{GPU: {reason: microseconds}} for the slowdown reasons and SW power cap over one window.

    A reason with a counter in both snapshots is the counters' difference; one without is the
    number of loaded samples that show it, times the sampling interval.
    """
    out = {}
    for label in sorted(after):
        times = {}
        for reason in SLOWDOWN_REASONS + ("sw_power_cap",):
            if reason in before.get(label, {}) and reason in after[label]:
                times[reason] = _gained(label, reason + " time", before[label][reason], after[label][reason])
            elif samples is not None and label in samples:
                times[reason] = sum(1 for _mhz, r in samples[label] if r.get(reason)) * interval_us
        out[label] = times
    return out


def _gained(label, what, before, after):
    """after - before of a cumulative counter; one that went down (the driver reloaded or the GPU
    was reset inside the window) hides what happened in it, so it is a failure, never a pass."""
    if after < before:
        raise ParseError("nvidia-smi", "cumulative counters that only grow across the window",
                         why="%s's %s went down from %s to %s: the driver was reloaded or the GPU reset "
                             "while the gate ran; run the gate again" % (label, what, before, after))
    return after - before


def _mean_clock(samples):
    return dict((label, round(sum(m for m, _r in rows) / len(rows))) for label, rows in samples.items()
                if rows and all(m is not None for m, _r in rows))


def _worst(times, label):
    return max([times[label].get(r) for r in SLOWDOWN_REASONS if times[label].get(r) is not None] or [None])


def _describe(times, labels, reasons):
    return "; ".join("%s: %s" % (label, ", ".join("%s %d us" % (_LABELS[r], times[label][r]) for r in reasons
                                                  if times[label].get(r))) for label in labels)


def clock_events(texts, ctx):
    """The ``clock_events`` verdict for the gpu-burn window (the burn's own verdict is ``gpu_burn``)."""
    before = _clock_counters(_labelled(texts.get("clocks_before", "")))
    after = _clock_counters(_labelled(texts.get("clocks_after", "")))
    samples = _loaded_samples(texts.get("clocks_samples", ""))
    times = reason_times(before, after, samples, SAMPLE_INTERVAL_MS * 1000)
    # HW slowdown has no counter, so every GPU needs samples under load
    untimed = [label for label in times if not samples.get(label)]
    if untimed:
        raise ParseError("nvidia-smi", "clock-event counters and samples under load for every GPU",
                         why="no sample shows %s under load (HW slowdown has no counter)" % ", ".join(untimed))
    means = _mean_clock(samples)
    details = (("window", "gpu_burn"), ("reason_us", tuple((l, tuple(sorted(t.items()))) for l, t in times.items())),
               ("mean_sm_clock_mhz", tuple(sorted(means.items()))),
               ("loaded_samples", tuple((l, len(rows)) for l, rows in sorted(samples.items()))))
    result = judge("clock_events", dict((l, _worst(times, l)) for l in times), ctx.profile, details)
    return {"clock_events": _clock_verdict(result, times, means, samples, ctx)}


def _clock_verdict(result, times, means, samples, ctx):
    if not result.passed:
        slowed = [l for l in sorted(times) if (_worst(times, l) or 0) > result.threshold]
        return dataclasses.replace(result, reason="%s; during gpu-burn %s" % (
            result.reason, _describe(times, slowed, SLOWDOWN_REASONS)))
    floor = ctx.param("clock_events", "min_sm_clock_mhz")
    if floor is not None:
        low = sorted((l, means.get(l)) for l in samples if means.get(l) is None or means[l] < floor)
        if low:
            return dataclasses.replace(result, verdict=FAIL, reason=(
                "clock_events: mean SM clock under load below the floor of %d MHz: %s" % (floor, ", ".join(
                    "%s %s" % (l, "no loaded sample" if m is None else "%d MHz" % m) for l, m in low))))
    capped = _describe(times, sorted(times), ("sw_power_cap",))
    clock = ", ".join("%s %d MHz" % kv for kv in sorted(means.items())) or "not sampled"
    return dataclasses.replace(result, reason="%s; SW power cap (reported, not judged): %s; mean SM clock under "
                                              "load: %s" % (result.reason, capped or "none", clock))


# ---- ECC, row remapping and XIDs across the soak ----

def _counters(gpu):
    return (("uncorrected", gpu.ecc_uncorrected_volatile), ("corrected", gpu.ecc_corrected_volatile),
            ("remap_pending", gpu.remap_pending), ("remap_failure", gpu.remap_failure))


def _new_xids(before, after):
    """XID events in ``after`` beyond those ``before`` held, per (PCI bus, code)."""
    seen = {}
    for event in before.xids:
        seen[(event.pci, event.code)] = seen.get((event.pci, event.code), 0) + 1
    new = []
    for event in after.xids:
        key = (event.pci, event.code)
        if seen.get(key):
            seen[key] -= 1
        else:
            new.append("PCI %s: XID %d" % key)
    return new


def _window_counters(texts):
    before, after = _labelled(texts.get("before_smi", "")), _labelled(texts.get("after_smi", ""))
    if set(before) != set(after):
        raise ParseError("nvidia-smi", "the same GPUs before the GPU phase and after the soak",
                         why="before: %s; after: %s" % (", ".join(sorted(before)), ", ".join(sorted(after))))
    for label, gpu in sorted(after.items()):
        for name, value in _counters(gpu) + _counters(before[label]):
            if value is None:
                raise ParseError("nvidia-smi -q", "volatile ECC counters and row remapping for every GPU",
                                 why="%s does not report %s" % (label, name))
    return before, after


def _window_problems(before, after, new_xids, ctx):
    threshold = ctx.threshold("soak_errors")
    problems = []
    corrected = dict((l, _gained(l, "corrected volatile ECC count", before[l].ecc_corrected_volatile,
                                 after[l].ecc_corrected_volatile)) for l in after)
    limit = threshold.param("max_correctable", 0)
    over = ["%s +%d" % (l, d) for l, d in sorted(corrected.items()) if d > limit]
    if over:
        problems.append("corrected ECC errors gained above %d per GPU: %s" % (limit, ", ".join(over)))
    for attr, what, key in (("remap_pending", "pending row remap", "max_remap_pending"),
                            ("remap_failure", "row-remap failure", "max_remap_failures")):
        flagged = [l for l in sorted(after) if getattr(after[l], attr)]
        if len(flagged) > threshold.param(key, 0):
            problems.append("%d GPU(s) with a %s after the soak (allowed %d): %s" % (
                len(flagged), what, threshold.param(key, 0), ", ".join(flagged)))
    if len(new_xids) > threshold.param("max_new_xids", 0):
        problems.append("%d XID(s) logged since the GPU phase began (allowed %d): %s" % (
            len(new_xids), threshold.param("max_new_xids", 0), "; ".join(new_xids)))
    return problems + _window_slowdown(before, after, ctx)


def _window_slowdown(before, after, ctx):
    """Slowdown time across the soak by the counters, judged by clock_events' limit when the profile has it."""
    limit = ctx.threshold("clock_events")
    if limit is None:
        return []
    times = reason_times(_clock_counters(before), _clock_counters(after), None, 0)
    slowed = [l for l in sorted(times) if (_worst(times, l) or 0) > limit.limit]
    if not slowed:
        return []
    described = _describe(times, slowed, SLOWDOWN_REASONS)
    return ["slowdown above clock_events' limit of %s us: %s" % (limit.limit, described)]


def soak_errors(texts, ctx):
    """Uncorrectable ECC gained is the measured value; the other limits add reasons to fail."""
    before, after = _window_counters(texts)
    new_xids = _new_xids(parse_kernel_log(texts.get("before_dmesg", "")), parse_kernel_log(texts.get("after_dmesg", "")))
    table = tuple((l, tuple((name, (b, a, None if b is None or isinstance(b, bool) else a - b))
                            for (name, b), (_n, a) in zip(_counters(before[l]), _counters(after[l]))))
                  for l in sorted(after))
    details = (("counters_before_after_diff", table), ("new_xids", tuple(new_xids)))
    gained = dict((l, _gained(l, "uncorrected volatile ECC count", before[l].ecc_uncorrected_volatile,
                              after[l].ecc_uncorrected_volatile)) for l in after)
    result = judge("soak_errors", gained, ctx.profile, details)
    problems = _window_problems(before, after, new_xids, ctx)
    if result.passed and problems:
        result = dataclasses.replace(result, verdict=FAIL, reason="soak_errors: " + "; ".join(problems))
    elif not result.passed:
        result = dataclasses.replace(result, reason="%s (uncorrectable ECC errors gained from before the GPU phase "
                                                    "to after the soak)%s" % (
                                                        result.reason, "; " + "; ".join(problems) if problems else ""))
    return {"soak_errors": result}


# ---- NVSwitch fabric ----

def nvswitch_fabric(texts, ctx):
    """GPUs whose fabric is ``Completed``/``Success``; the fabric manager must be active when asked for."""
    gpus = parse_report(texts.get("nvidia_smi", ""))
    states = dict(("GPU%d" % g.index, (g.fabric_state, g.fabric_status)) for g in gpus.gpus)
    up = [l for l, s in sorted(states.items()) if s == _FABRIC_UP]
    details = (("fabric", tuple((l, "%s/%s" % (s[0] or "N/A", s[1] or "N/A")) for l, s in sorted(states.items()))),)
    manager = None
    if ctx.param("nvswitch_fabric", "fabric_manager", True):
        manager = _manager_state(texts.get("fabricmanager", ""))
        details += (("fabricmanager", manager),)
    result = judge("nvswitch_fabric", len(up), ctx.profile, details)
    if not result.passed:
        return {"nvswitch_fabric": dataclasses.replace(result, reason="%s; %s" % (result.reason, _fabric_why(states)))}
    if manager is not None and manager != "active":
        return {"nvswitch_fabric": dataclasses.replace(result, verdict=FAIL, reason=(
            "nvswitch_fabric: nvidia-fabricmanager is %s, not active; start it (systemctl start "
            "nvidia-fabricmanager) with the version that matches the driver" % manager))}
    return {"nvswitch_fabric": result}


def _manager_state(text):
    words = (text or "").split()
    if len(words) != 1:
        raise ParseError("systemctl is-active", "one word (active, inactive, failed, ...)",
                         why="found %r" % (text or "")[:80])
    return words[0]


def _fabric_why(states):
    down = ["%s %s/%s" % (l, s[0] or "N/A", s[1] or "N/A") for l, s in sorted(states.items()) if s != _FABRIC_UP]
    if states and all(s == (None, None) for s in states.values()):
        return ("no GPU reports a fabric state (N/A): this is not an NVSwitch (HGX/DGX) board, or its driver "
                "predates 550 or its GPUs predate Hopper; judge it by a profile for its SKU without nvswitch_fabric")
    return "not in the fabric: %s (State must be Completed and Status Success; check nvidia-fabricmanager and " \
           "the NVSwitch firmware)" % ", ".join(down)
