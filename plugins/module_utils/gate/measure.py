# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""From raw tool output to measured values: parse (``parsers/``), then pick the number.

Each function takes ``texts`` ({item suffix: stdout}; ``""`` for single runs) and the
gate context, and returns {check: (measured, details)} with ``measured`` in the
catalog's canonical unit, ready for ``judging.judge``. A failure that is a fact
rather than a number (nccl-tests data corruption) comes back as a failed CheckResult.
Parsers raise ``ParseError``; phases turn it into a failed check (fail closed).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import dataclasses

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate import gpu_load
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import GateError, ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.judging import judge
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.dcgmi import parse_dcgmi
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.fio import parse_fio
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.gpu_burn import parse_gpu_burn
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.iperf3 import parse_iperf3
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.kernel_log import parse_kernel_log
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nccl import parse_nccl
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nvbandwidth import parse_nvbandwidth
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nvidia_smi_xml import parse_nvidia_smi_any
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nvlink import parse_nvlink_status
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.perftest import parse_perftest
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.results import FAIL, CheckResult, failed_closed
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.soak import metric_value, parse_iterations
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.units import UNITS, parse_size

__all__ = ["dcgm_diag", "fio", "gpu_burn", "ib_write_bw", "iperf3", "kernel_log", "nvidia_smi_query",
           "nvlink_status", "nccl", "nvbandwidth", "repeated", "parse_nvidia_smi_any", "NVB_TESTCASES"]

NVB_TESTCASES = {
    "nvbandwidth_d2d": "device_to_device_memcpy_read_ce",
    "nvbandwidth_h2d": "host_to_device_memcpy_ce",
    "nvbandwidth_d2h": "device_to_host_memcpy_ce",
}


def _single(texts):
    return texts.get("", "")


def _flagged(gpus, attribute):
    """GPUs with a Yes/No flag set (pending retirement/remap, remap failure); ParseError when unreported."""
    return tuple(label for label, value in gpus.per_gpu(attribute) if value)


def _retired(gpus):
    sbe, dbe = dict(gpus.per_gpu("retired_sbe")), dict(gpus.per_gpu("retired_dbe"))
    return dict((label, sbe[label] + dbe[label]) for label in sbe)


_NVSMI_VALUES = {
    "gpu_count": lambda gpus: gpus.count(),
    "gpu_model": lambda gpus: dict(("GPU%d" % i, name) for i, name in gpus.names()),
    "ecc_uncorrectable": lambda gpus: dict(gpus.per_gpu("ecc_uncorrected_volatile")),
    "retired_pages": _retired,
}
# Checks that count GPUs with a flag set: the reason names them.
_NVSMI_FLAGS = {"retired_pages_pending": "retired_pending", "row_remap_pending": "remap_pending",
                "row_remap_failures": "remap_failure"}


def _nvsmi_check(check, gpus, ctx, details):
    if check in _NVSMI_VALUES:
        return _NVSMI_VALUES[check](gpus), details
    flagged = _flagged(gpus, _NVSMI_FLAGS[check])
    result = judge(check, len(flagged), ctx.profile, details + (("gpus", flagged),))
    if not result.passed and flagged:
        result = dataclasses.replace(result, reason="%s (%s)" % (result.reason, ", ".join(flagged)))
    return result


def nvidia_smi_query(texts, ctx):
    """One nvidia-smi report feeds GPU count, model and the memory-error counters.

    A counter the GPU does not report (N/A, e.g. under MIG) fails only its own check, with
    the reason "not reported", never its neighbours.
    """
    gpus = parse_nvidia_smi_any(_single(texts))
    details = (("driver_version", gpus.driver_version),)
    out = {}
    for check in list(_NVSMI_VALUES) + list(_NVSMI_FLAGS):
        if ctx.threshold(check) is None:
            continue
        try:
            out[check] = _nvsmi_check(check, gpus, ctx, details)
        except GateError as exc:
            threshold = ctx.threshold(check)
            out[check] = failed_closed(check, threshold.phase, "%s: %s" % (check, exc.msg), threshold=threshold.limit,
                                       unit=threshold.unit)
    return out


def nvlink_status(texts, ctx):
    if not _single(texts).strip():
        return {"nvlink_links": _no_nvlink(ctx)}
    status = parse_nvlink_status(_single(texts))
    if not status.gpus:
        raise ParseError("nvidia-smi nvlink --status", "at least one GPU", why="no GPU was listed")
    return {"nvlink_links": (dict(status.active_links()), ())}


def _no_nvlink(ctx):
    """``nvidia-smi nvlink --status`` printed nothing: no GPU reports an NVLink link, judged as 0 links."""
    result = judge("nvlink_links", 0, ctx.profile, (("gpus", 0),))
    what = ("no NVLink links reported: nvidia-smi nvlink --status printed nothing, so the GPUs have no NVLink "
            "or their links are down or disabled")
    if result.passed:
        return dataclasses.replace(result, reason="nvlink_links: %s, as the profile allows" % what)
    return dataclasses.replace(result, reason=(
        "nvlink_links: %s; the profile expects at least %s links per GPU. Check the GPUs' NVLink (nvidia-smi "
        "topo -m, the fabric manager on NVSwitch systems), or judge a node without NVLink by a profile without "
        "nvlink_links" % (what, result.threshold)))


def dcgm_diag(texts, ctx):
    """Every (test, GPU, status) result, so the verdict can name the GPU and the test."""
    diag = parse_dcgmi(_single(texts))
    failures = tuple(("%s %s" % (r.test, r.entity or "node")).strip() for r in diag.failures())
    warnings = tuple("%s %s: %s" % (r.test, r.entity or "node", w) for r in diag.results for w in r.warnings
                     if r.status in ("fail", "warn"))
    details = (("dcgm_version", diag.dcgm_version), ("failures", failures), ("warnings", warnings))
    return {"dcgm_diag": (tuple((r.test, r.entity, r.status) for r in diag.results), details)}


def gpu_burn(texts, ctx):
    """Number of GPUs gpu-burn reported OK (never its exit code); FAULTY ones in the details.

    The same run feeds ``clock_events`` (gpu_load.py) when the profile has it; each check
    fails closed on its own, so unreadable clock samples never hide the burn's verdict.
    """
    out = {}
    if ctx.threshold("clock_events") is not None:
        out.update(_own_failure("clock_events", ctx, lambda: gpu_load.clock_events(texts, ctx)))
    if ctx.threshold("gpu_burn") is not None:
        out.update(_own_failure("gpu_burn", ctx, lambda: _burn_verdict(texts, ctx)))
    return out


def _own_failure(check, ctx, extract):
    """``extract()``, or the check failed closed with the parse error as its reason."""
    try:
        return extract()
    except GateError as exc:
        threshold = ctx.threshold(check)
        return {check: failed_closed(check, threshold.phase, "%s: %s" % (check, exc.msg), threshold=threshold.limit,
                                     unit=threshold.unit)}


def _burn_verdict(texts, ctx):
    burn = parse_gpu_burn(_single(texts))
    details = (("tested", burn.tested), ("faulty_gpus", burn.faulty()), ("errors", burn.errors))
    result = judge("gpu_burn", burn.ok_count(), ctx.profile, details)
    if not result.passed and burn.faulty():
        result = dataclasses.replace(result, reason="%s; gpu-burn reported FAULTY: %s" % (
            result.reason, ", ".join("GPU %d" % g for g in burn.faulty())))
    return {"gpu_burn": result}


def kernel_log(texts, ctx):
    """XID codes from the kernel log; a failing verdict names the GPUs (PCI bus) that logged them."""
    log = parse_kernel_log(_single(texts))
    by_gpu = log.by_gpu()
    details = (("by_gpu", tuple(sorted(by_gpu.items()))), ("sxids", tuple(e.code for e in log.sxids)))
    result = judge("xid", list(log.codes()), ctx.profile, details)
    if not result.passed and by_gpu:
        result = dataclasses.replace(result, reason="%s (%s)" % (result.reason, "; ".join(
            "PCI %s: XID %s" % (pci, ", ".join(str(c) for c in codes)) for pci, codes in sorted(by_gpu.items()))))
    return {"xid": result}


_FIO = {"fio_seq_read": ("read", "bw"), "fio_seq_write": ("write", "bw"),
        "fio_rand_read": ("read", "iops"), "fio_rand_write": ("write", "iops")}


def fio(check):
    """fio JSON: sequential checks in MB/s, random checks in IOPS, summed over jobs."""
    def extract(texts, ctx):
        result = parse_fio(_single(texts))
        direction, metric = _FIO[check]
        value = result.bandwidth_mbs(direction) if metric == "bw" else result.iops(direction)
        return {check: (value, (("fio_version", result.version), ("jobs", len(result.jobs))))}
    return extract


def _nccl_row(result, ctx, check):
    """The largest measured size at or above the profile's smallest size that counts.

    ``min_message_size`` (default: ``message_size``, the live sweep's end) lets captures
    from other sites, whose sweeps ended elsewhere, be judged by the same profile.
    """
    largest = int(ctx.param(check, "message_size", parse_size("8G")))
    smallest = int(ctx.param(check, "min_message_size", largest))
    counted = [row for row in result.rows if row.size >= smallest]
    if not counted:
        raise ParseError("nccl-tests", "a result row at or above %d bytes (min_message_size)" % smallest,
                         why="the sweep ends at %d bytes; lower min_message_size in the profile to judge "
                             "this capture, or sweep further (-e)" % result.rows[-1].size)
    return max(counted, key=lambda row: row.size)


def _nccl_row_if_any(result, ctx, check):
    """The row that would be judged, for the report; None when the table could not be read."""
    if not result.rows:
        return None
    try:
        return _nccl_row(result, ctx, check)
    except ParseError:
        return None


def _nccl_failure(check, ctx, row, result, details):
    """A failure that is a fact, not a number: corrupted data, or ranks that never talked."""
    wrong = result.wrong_total()
    if wrong or not result.out_of_bounds_ok:
        why = ("nccl-tests reported corrupted results (#wrong total %d, out of bounds %d): a GPU or link "
               "computes wrong data" % (wrong, result.out_of_bounds))
    elif row.oop_busbw == 0 and row.oop_algbw > 0:
        # busbw = algbw x 2(n-1)/n: 0 with algbw > 0 means n = 1, even without the header's rank lines.
        return _nccl_rank_failure(check, ctx, result, details, row)
    else:
        return None
    return _nccl_failed(check, ctx, row.oop_busbw, why, details)


def _nccl_rank_failure(check, ctx, result, details, row=None):
    """One rank measures no bandwidth between GPUs: say whether one process or several ran so."""
    if result.runs > 1:
        why = ("%d processes each ran as rank 0 of 1: nccl-tests built without MPI (MPI=1) was launched under "
               "mpirun, so each process ran alone and none measured bandwidth between GPUs; fix: rebuild "
               "nccl-tests with MPI=1 (make MPI=1 MPI_HOME=<MPI folder>), or run one process with -g <GPUs "
               "per node>" % result.runs)
    else:
        why = ("the run had a single rank (one process, one GPU): all_reduce busbw is 0 by definition with one "
               "rank (busbw = algbw x 2(n-1)/n), so it measures no bandwidth between GPUs; fix: %s"
               % _nccl_rank_fix(check, ctx))
    busbw = row.oop_busbw if row is not None else None
    return _nccl_failed(check, ctx, busbw, why, details)


def _nccl_rank_fix(check, ctx):
    threshold = ctx.threshold("gpu_count")
    gpus = int(threshold.limit) if threshold is not None else int(ctx.opt("gpus_per_node", 8))
    if check == "nccl_multi_node":
        return ("launch the profile's rank count, one rank per GPU on every node (mpirun -np <nodes x %d> "
                "all_reduce_perf -g 1, with nccl-tests built with MPI=1)" % gpus)
    return "run all_reduce_perf with all GPUs of the node (-g %d, the profile's GPU count)" % gpus


def _nccl_failed(check, ctx, measured, why, details):
    threshold = ctx.threshold(check)
    return CheckResult(check, threshold.phase, measured, threshold.limit, threshold.unit, FAIL,
                       "%s: %s" % (check, why), details)


def nccl(check):
    def extract(texts, ctx):
        result = parse_nccl(_single(texts))
        details = (("nranks", result.nranks), ("runs", result.runs), ("format", result.table_format),
                   ("footer_avg_busbw", result.avg_busbw))
        if result.nranks == 1:  # fails whatever the rows say; the row only shows what was measured
            return {check: _nccl_rank_failure(check, ctx, result, details, _nccl_row_if_any(result, ctx, check))}
        row = _nccl_row(result, ctx, check)
        details = (("message_size", row.size),) + details
        failure = _nccl_failure(check, ctx, row, result, details)
        return {check: failure or (row.oop_busbw, details)}
    return extract


def nvbandwidth(check):
    def extract(texts, ctx):
        case = parse_nvbandwidth(_single(texts)).testcase(NVB_TESTCASES[check])
        if UNITS.get(case.unit, ("", 0))[0] != "bandwidth":
            raise ParseError("nvbandwidth", "a bandwidth unit such as GB/s", why="got %r" % case.unit)
        factor = UNITS[case.unit][1] / UNITS["GB/s"][1]
        values = dict((label, value * factor) for label, value in case.values)
        return {check: (values, (("testcase", case.name),))}
    return extract


def repeated(check):
    """Reference job / soak: one metric per iteration; any failed iteration fails closed."""
    def extract(texts, ctx):
        threshold = ctx.threshold(check)
        metric = threshold.param("metric") if threshold is not None else None
        values = {}
        for number, rc, body in parse_iterations(_single(texts), check):
            if rc != 0:
                raise ParseError(check, "iterations that exit 0", why="iteration %d exited %s" % (number, rc))
            value = metric_value(body, metric)
            if value is None:
                raise ParseError(check, 'a "%s: <number>" line in iteration %d' % (metric, number))
            values["iteration %d" % number] = value
        return {check: (values, (("iterations", len(values)),))}
    return extract


def iperf3(texts, ctx):
    """Receiver throughput of ``iperf3 -J`` in Gb/s."""
    result = parse_iperf3(_single(texts))
    details = (("streams", result.streams), ("seconds", result.seconds), ("retransmits", result.retransmits))
    return {"iperf3_tcp": (result.received_gbps(), details)}


def ib_write_bw(texts, ctx):
    """Per-HCA ``ib_write_bw`` average at the largest size, Gb/s; one saved output per HCA."""
    values = {}
    for hca, text in sorted(texts.items()):
        if not hca:
            raise ParseError("ib_write_bw", "one output per HCA (raw/ib_write_bw.<hca>.txt)")
        result = parse_perftest(text)
        if result.device and result.device != hca:
            raise ParseError("ib_write_bw", "a report for device %s" % hca, why="it reports %s" % result.device)
        values[hca] = result.average_gbps()
    return {"ib_write_bw": (values, (("hcas", tuple(sorted(values))),))}
