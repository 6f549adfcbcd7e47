# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The gate's probes: which tool feeds which checks, with which arguments, in which order.

A probe is one tool invocation (or one input) whose raw output is saved as
``raw/<probe>.txt`` (per-item probes such as ``ib_write_bw`` save
``raw/<probe>.<item>.txt``) and feeds one or more checks of the threshold catalog.
``PROBES`` is in run order, cheapest first within each phase. ``collect`` produces the
raw outputs (``ToolRun``s); ``extract`` functions (``measure.py``) turn them into
measured values for ``thresholds.judge``.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import json
import os
import socket

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate import measure
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.attestation import (
    IMAGE_RELEASE_PATH, extract_firmware, extract_image_release)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.runner import MISSING, ToolRun
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.soak import run_repeated
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.tpm import collect_quote, extract_tpm_quote
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.thresholds import parse_size

__all__ = ["Probe", "PROBES", "LOCAL_CHECKS", "RC_IS_NOT_A_VERDICT", "probe_by_name", "collect", "describe"]

Probe = collections.namedtuple("Probe", "name phase checks mode tool args extract retryable")

# Checks the gate judges itself (not in the threshold catalog): the image release always,
# the TPM quote when the caller asks for it (``tpm_quote`` option).
LOCAL_CHECKS = ("image_release", "tpm_quote")
# Probes whose exit status is not a verdict: dcgmi exits non-zero when a test fails (the
# JSON says which), gpu-burn's exit code is unreliable (its summary is judged instead);
# repeated runs record each iteration's status in their raw output.
RC_IS_NOT_A_VERDICT = ("dcgm_diag", "gpu_burn", "reference_job", "soak")
NVSMI_FIELDS = ("index,name,pci.bus_id,driver_version,ecc.errors.uncorrected.volatile.total,retired_pages.sbe,"
                "retired_pages.dbe,retired_pages.pending,remapped_rows.pending,remapped_rows.failure")


def _param(ctx, check, key, default):
    threshold = ctx.threshold(check)
    value = threshold.param(key) if threshold is not None else None
    return default if value is None else value


def _nccl_args(ctx, check, gpus):
    size = int(_param(ctx, check, "message_size", parse_size("8G")))
    return ["-b", str(size // 8), "-e", str(size), "-f", "2", "-g", str(gpus)]


def _gpus(ctx):
    """GPUs per node: the profile's expected gpu_count, else the ``gpus_per_node`` option."""
    threshold = ctx.threshold("gpu_count")
    return int(threshold.limit if threshold is not None else ctx.opt("gpus_per_node", 8))


def _nccl_single(ctx):
    return _nccl_args(ctx, "nccl_single_node", _gpus(ctx))


def _nccl_multi(ctx):
    """``mpirun -H leader,peer... -np N all_reduce_perf``: one rank per GPU on every node."""
    hosts = [ctx.opt("node", socket.gethostname())] + list(ctx.opt("peers", []))
    gpus = _gpus(ctx)
    launcher = list(ctx.opt("fabric_launcher", ["mpirun", "--allow-run-as-root"]))[1:]
    return launcher + ["-H", ",".join("%s:%d" % (h, gpus) for h in hosts), "-np", str(gpus * len(hosts)),
                       "all_reduce_perf"] + _nccl_args(ctx, "nccl_multi_node", 1)


def _fio(rw, bs):
    def build(ctx):
        check = "fio_" + {"read": "seq_read", "write": "seq_write", "randread": "rand_read",
                          "randwrite": "rand_write"}[rw]
        size = int(_param(ctx, check, "size", parse_size("1G")))
        runtime = int(_param(ctx, check, "runtime_s", 30))
        folder = ctx.opt("storage_dir", "/var/tmp/gpufleet-gate")
        return ["--name=gpufleet-" + check, "--rw=" + rw, "--bs=" + bs, "--size=%d" % size,
                "--runtime=%d" % runtime, "--time_based", "--ioengine=psync", "--numjobs=1",
                "--directory=" + folder, "--filename=gpufleet-gate.fio", "--output-format=json"]
    return build


def _iperf3(ctx):
    peers = list(ctx.opt("peers", []))
    seconds = int(_param(ctx, "iperf3_tcp", "duration_s", 5))
    return ["-c", peers[0] if peers else ctx.opt("loopback_address", "127.0.0.1"), "-t", str(seconds), "-J"]


def _ib(ctx):
    return ["--report_gbits", "-D", str(int(ctx.opt("ib_duration_s", 5)))]


def _fixed(*args):
    return lambda ctx: list(args)


PROBES = (
    Probe("image_release", "attestation", ("image_release",), "file", None, None, extract_image_release, False),
    Probe("firmware", "attestation", ("firmware_pins",), "input", None, None, extract_firmware, False),
    Probe("tpm_quote", "attestation", ("tpm_quote",), "tpm", "tpm2_quote", None, extract_tpm_quote, False),
    Probe("nvidia_smi_query", "gpu", ("gpu_count", "gpu_model", "ecc_uncorrectable", "retired_pages",
                                      "retired_pages_pending", "row_remap_pending", "row_remap_failures"), "run", "nvidia-smi",
          _fixed("--query-gpu=" + NVSMI_FIELDS, "--format=csv"), measure.nvidia_smi_query, False),
    Probe("dmesg", "gpu", ("xid",), "run", "dmesg", _fixed(), measure.kernel_log, False),
    Probe("dcgm_diag", "gpu", ("dcgm_diag",), "run", "dcgmi",
          lambda ctx: ["diag", "-r", str(_param(ctx, "dcgm_diag", "level", 3)), "-j"], measure.dcgm_diag, False),
    Probe("gpu_burn", "gpu", ("gpu_burn",), "run", "gpu_burn",
          lambda ctx: [str(_param(ctx, "gpu_burn", "duration_s", 60))], measure.gpu_burn, False),
    Probe("nvidia_smi_nvlink", "nvlink", ("nvlink_links",), "run", "nvidia-smi", _fixed("nvlink", "--status"),
          measure.nvlink_status, False),
    Probe("nvbandwidth_d2d", "nvlink", ("nvbandwidth_d2d",), "run", "nvbandwidth",
          _fixed("-t", "device_to_device_memcpy_read_ce"), measure.nvbandwidth("nvbandwidth_d2d"), True),
    Probe("nvbandwidth_h2d", "nvlink", ("nvbandwidth_h2d",), "run", "nvbandwidth",
          _fixed("-t", "host_to_device_memcpy_ce"), measure.nvbandwidth("nvbandwidth_h2d"), True),
    Probe("nvbandwidth_d2h", "nvlink", ("nvbandwidth_d2h",), "run", "nvbandwidth",
          _fixed("-t", "device_to_host_memcpy_ce"), measure.nvbandwidth("nvbandwidth_d2h"), True),
    Probe("nccl_single_node", "nvlink", ("nccl_single_node",), "run", "all_reduce_perf", _nccl_single,
          measure.nccl("nccl_single_node"), True),
    Probe("iperf3_tcp", "fabric", ("iperf3_tcp",), "iperf3", "iperf3", _iperf3, measure.iperf3, True),
    Probe("ib_write_bw", "fabric", ("ib_write_bw",), "per_hca", "ib_write_bw", _ib, measure.ib_write_bw, True),
    Probe("nccl_multi_node", "fabric", ("nccl_multi_node",), "launcher", "mpirun", _nccl_multi,
          measure.nccl("nccl_multi_node"), True),
    Probe("fio_seq_write", "storage", ("fio_seq_write",), "fio", "fio", _fio("write", "1M"),
          measure.fio("fio_seq_write"), True),
    Probe("fio_seq_read", "storage", ("fio_seq_read",), "fio", "fio", _fio("read", "1M"),
          measure.fio("fio_seq_read"), True),
    Probe("fio_rand_write", "storage", ("fio_rand_write",), "fio", "fio", _fio("randwrite", "4k"),
          measure.fio("fio_rand_write"), True),
    Probe("fio_rand_read", "storage", ("fio_rand_read",), "fio", "fio", _fio("randread", "4k"),
          measure.fio("fio_rand_read"), True),
    Probe("reference_job", "reference", ("reference_job",), "repeat", None, None, measure.repeated("reference_job"),
          False),
    Probe("soak", "soak", ("soak",), "repeat", None, None, measure.repeated("soak"), False),
)


def probe_by_name(name):
    for probe in PROBES:
        if probe.name == name:
            return probe
    raise KeyError(name)


def _synthetic(key, text, error=None, reason=""):
    return ToolRun(key, [], 0 if error is None else None, text, "", 0.0, error, reason)


def _read_file(probe, ctx):
    path = ctx.opt("image_release_path", IMAGE_RELEASE_PATH)
    try:
        with open(path) as handle:
            return [_synthetic(probe.name, handle.read())]
    except (IOError, OSError) as exc:
        return [_synthetic(probe.name, "", MISSING, "%s: cannot read %s (%s); the node was not built from a "
                                                    "gpufleet image or the file was removed" % (probe.name, path, exc))]


def _input(probe, ctx):
    inventory = ctx.opt("firmware_inventory")
    if not inventory:
        return [_synthetic(probe.name, "", MISSING, "%s: no firmware inventory was given; collect it from the BMC "
                                                    "with gpufleet.baremetal.redfish_info and pass "
                                                    "firmware_inventory" % probe.name)]
    return [_synthetic(probe.name, json.dumps(inventory, indent=1, sort_keys=True) + "\n")]


def _hcas(ctx):
    hcas = list(ctx.opt("hcas", []))
    if not hcas and os.path.isdir("/sys/class/infiniband"):
        hcas = sorted(os.listdir("/sys/class/infiniband"))
    return hcas


def _per_hca(probe, ctx):
    hcas = _hcas(ctx)
    if not hcas:
        return [_synthetic(probe.name, "", MISSING, "%s: no HCA to test: none in /sys/class/infiniband and none "
                                                    "given in hcas" % probe.name)]
    runs = []
    for hca in hcas:
        # Loopback per HCA (server and client on this node), as AzNHC's check_ib_bw does.
        server = ["-d", hca] + probe.args(ctx)
        runs.append(ctx.runner.run_pair("%s.%s" % (probe.name, hca), probe.tool, server, server + ["localhost"],
                                        ctx.timeout(probe.name)))
    return runs


def _iperf3_run(probe, ctx):
    if ctx.opt("peers"):
        # The controller starts ``iperf3 -s -1`` on the first peer before the leader's gate runs.
        return [ctx.runner.run(probe.name, probe.tool, probe.args(ctx), ctx.timeout(probe.name))]
    address = ctx.opt("loopback_address", "127.0.0.1")
    return [ctx.runner.run_pair(probe.name, probe.tool, ["-s", "-1", "-B", address], probe.args(ctx),
                                ctx.timeout(probe.name))]


def _launcher(probe, ctx):
    peers = list(ctx.opt("peers", []))
    if not peers:
        return [_synthetic(probe.name, "", MISSING, "%s: no peers given; the multi-node test runs on the set's "
                                                    "leader with peers set to the other members; on the members, "
                                                    "waive it with skip_checks: [nccl_multi_node]" % probe.name)]
    nodes = _param(ctx, "nccl_multi_node", "nodes", None)
    if nodes is not None and len(peers) + 1 != nodes:
        return [_synthetic(probe.name, "", MISSING, "%s: the profile wants a set of %d nodes, this leader was "
                                                    "given %d peer(s); pass %d peers" % (
                                                        probe.name, nodes, len(peers), nodes - 1))]
    tool = list(ctx.opt("fabric_launcher", ["mpirun", "--allow-run-as-root"]))[0]
    return [ctx.runner.run(probe.name, tool, probe.args(ctx), ctx.timeout(probe.name))]


def _fio_run(probe, ctx):
    """fio in ``storage_dir`` (created if needed); the test file is removed afterwards."""
    folder = ctx.opt("storage_dir", "/var/tmp/gpufleet-gate")
    try:
        if not os.path.isdir(folder):
            os.makedirs(folder, 0o700)
    except OSError as exc:
        why = "%s: cannot create storage_dir %s (%s)" % (probe.name, folder, exc)
        return [_synthetic(probe.name, "", MISSING, why)]
    try:
        return [ctx.runner.run(probe.name, probe.tool, probe.args(ctx), ctx.timeout(probe.name))]
    finally:
        try:
            os.remove(os.path.join(folder, "gpufleet-gate.fio"))
        except OSError:
            pass


def _repeat(probe, ctx):
    return [run_repeated(probe.name, ctx)]


_COLLECT = {"file": _read_file, "fio": _fio_run, "tpm": collect_quote, "input": _input, "per_hca": _per_hca, "iperf3": _iperf3_run,
            "launcher": _launcher, "repeat": _repeat,
            "run": lambda probe, ctx: [ctx.runner.run(probe.name, probe.tool, probe.args(ctx),
                                                      ctx.timeout(probe.name))]}


def collect(probe, ctx):
    """Run the probe's tool(s) (or read its input): a list of ``ToolRun``."""
    return _COLLECT[probe.mode](probe, ctx)


def describe(probe, ctx):
    """What the probe would run (check mode): a short mapping."""
    if probe.mode == "per_hca":
        return {"probe": probe.name, "mode": probe.mode, "tool": probe.tool, "hcas": _hcas(ctx),
                "args": ["-d", "<hca>"] + probe.args(ctx)}
    if probe.mode in ("file", "input", "repeat", "tpm"):
        return {"probe": probe.name, "mode": probe.mode, "tool": probe.tool}
    tool = probe.tool
    if probe.mode == "launcher":
        tool = list(ctx.opt("fabric_launcher", ["mpirun"]))[0]
    return {"probe": probe.name, "mode": probe.mode, "tool": tool, "args": probe.args(ctx)}
