# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The gate's probes: which tool runs, with which arguments, in which order, read by which parser.

A probe is one tool invocation (or one input) whose raw output is saved as
``raw/<probe>.txt`` (per-item probes such as ``ib_write_bw`` save
``raw/<probe>.<item>.txt``). ``PROBES`` is in run order, cheapest first within each
phase; which checks a probe feeds, its phase and whether it may retry come from
``catalog.CHECKS``. ``collect`` produces the raw outputs (``ToolRun``s) by the probe's
mode; the extract functions (``measure.py``) parse them into measured values.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import dataclasses
import json
import os
import socket
from typing import Callable, Optional

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate import gpu_load, measure
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.attestation import (
    IMAGE_RELEASE_PATH, extract_firmware, extract_image_release)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.catalog import CHECKS, check_spec

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.runner import MISSING, ToolRun
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.soak import run_repeated
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.tpm import collect_quote, extract_tpm_quote
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.units import parse_size

__all__ = ["Probe", "PROBES", "probe_by_name", "NVSMI_FIELDS", "collect", "describe", "fixed", "nvidia_smi_args", "dcgm_args",
           "gpu_burn_args", "nvbandwidth_args", "nccl_single_args", "nccl_multi_args", "iperf3_args", "ib_args",
           "fio_args"]

NVSMI_FIELDS = ("index,name,pci.bus_id,driver_version,ecc.errors.uncorrected.volatile.total,retired_pages.sbe,"
                "retired_pages.dbe,retired_pages.pending,remapped_rows.pending,remapped_rows.failure")


def _nccl_args(ctx, check, gpus):
    size = int(ctx.param(check, "message_size", parse_size("8G")))
    return ["-b", str(size // 8), "-e", str(size), "-f", "2", "-g", str(gpus)]


def _gpus(ctx):
    """GPUs per node: the profile's expected gpu_count, else the ``gpus_per_node`` option."""
    threshold = ctx.threshold("gpu_count")
    return int(threshold.limit if threshold is not None else ctx.opt("gpus_per_node", 8))


def nvidia_smi_args(ctx):
    return ["--query-gpu=" + NVSMI_FIELDS, "--format=csv"]


def dcgm_args(ctx):
    return ["diag", "-r", str(ctx.param("dcgm_diag", "level", 3)), "-j"]


def gpu_burn_args(ctx):
    return [str(ctx.param("gpu_burn", "duration_s", 60))]


def nvbandwidth_args(check):
    return fixed("-t", measure.NVB_TESTCASES[check])


def nccl_single_args(ctx):
    return _nccl_args(ctx, "nccl_single_node", _gpus(ctx))


def nccl_multi_args(ctx):
    """``mpirun -H leader,peer... -np N all_reduce_perf``: one rank per GPU on every node."""
    hosts = [ctx.opt("node", socket.gethostname())] + list(ctx.opt("peers", []))
    gpus = _gpus(ctx)
    launcher = list(ctx.opt("fabric_launcher", ["mpirun", "--allow-run-as-root"]))[1:]
    return launcher + ["-H", ",".join("%s:%d" % (h, gpus) for h in hosts), "-np", str(gpus * len(hosts)),
                       "all_reduce_perf"] + _nccl_args(ctx, "nccl_multi_node", 1)


def fio_args(check, rw, bs):
    """fio in ``storage_dir`` with the check's size and runtime, JSON output."""
    def build(ctx):
        size = int(ctx.param(check, "size", parse_size("1G")))
        runtime = int(ctx.param(check, "runtime_s", 30))
        folder = ctx.opt("storage_dir", "/var/tmp/gpufleet-gate")
        return ["--name=gpufleet-" + check, "--rw=" + rw, "--bs=" + bs, "--size=%d" % size,
                "--runtime=%d" % runtime, "--time_based", "--ioengine=psync", "--numjobs=1",
                "--directory=" + folder, "--filename=gpufleet-gate.fio", "--output-format=json"]
    return build


def iperf3_args(ctx):
    peers = list(ctx.opt("peers", []))
    seconds = int(ctx.param("iperf3_tcp", "duration_s", 5))
    return ["-c", peers[0] if peers else ctx.opt("loopback_address", "127.0.0.1"), "-t", str(seconds), "-J"]


def ib_args(ctx):
    return ["--report_gbits", "-D", str(int(ctx.opt("ib_duration_s", 5)))]


def fixed(*args):
    return lambda ctx: list(args)


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
    nodes = ctx.param("nccl_multi_node", "nodes", None)
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


_COLLECT = {"burn": gpu_load.collect_burn, "window": gpu_load.collect_window, "fabric": gpu_load.collect_fabric,
            "file": _read_file, "fio": _fio_run, "tpm": collect_quote, "input": _input, "per_hca": _per_hca, "iperf3": _iperf3_run,
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


@dataclasses.dataclass(frozen=True)
class Probe:
    """One tool invocation (or input) whose raw output is saved as ``raw/<name>.txt``.

    ``mode`` picks the collector (``collect``); ``args(ctx)`` builds the argument list;
    ``extract(texts, ctx)`` parses the saved outputs into {check: (measured, details)}.
    ``rc_is_verdict`` False: the exit status is not a verdict (dcgmi exits non-zero when a
    test fails and its JSON says which; gpu-burn's exit code is unreliable).
    ``empty_is_output`` True: an empty stdout with exit status 0 is a result the extractor
    judges, not a failed run (``nvidia-smi nvlink --status`` prints nothing without NVLink).
    """

    name: str
    mode: str
    tool: Optional[str]
    args: Optional[Callable]
    extract: Callable
    rc_is_verdict: bool = True
    empty_is_output: bool = False

    @property
    def checks(self):
        return tuple(spec.name for spec in CHECKS if spec.probe == self.name)

    @property
    def phase(self):
        return check_spec(self.checks[0]).phase

    @property
    def retryable(self):
        return any(check_spec(name).retryable for name in self.checks)


# Run order: cheapest first within each phase.
PROBES = (
    Probe("image_release", "file", None, None, extract_image_release),
    Probe("firmware", "input", None, None, extract_firmware),
    Probe("tpm_quote", "tpm", "tpm2_quote", None, extract_tpm_quote),
    Probe("nvidia_smi_query", "run", "nvidia-smi", nvidia_smi_args, measure.nvidia_smi_query),
    Probe("dmesg", "run", "dmesg", fixed(), measure.kernel_log),
    Probe("dcgm_diag", "run", "dcgmi", dcgm_args, measure.dcgm_diag, rc_is_verdict=False),
    # gpu-burn, with the clock-event counters read before and after it and sampled while it runs.
    Probe("gpu_burn", "burn", "gpu_burn", gpu_burn_args, measure.gpu_burn, rc_is_verdict=False),
    # systemctl is-active exits 3 for an inactive unit: the extractor judges the word it prints.
    Probe("nvswitch_fabric", "fabric", "nvidia-smi", fixed("-q"), gpu_load.nvswitch_fabric, rc_is_verdict=False),
    Probe("nvidia_smi_nvlink", "run", "nvidia-smi", fixed("nvlink", "--status"), measure.nvlink_status,
          empty_is_output=True),
    Probe("nvbandwidth_d2d", "run", "nvbandwidth", nvbandwidth_args("nvbandwidth_d2d"),
          measure.nvbandwidth("nvbandwidth_d2d")),
    Probe("nvbandwidth_h2d", "run", "nvbandwidth", nvbandwidth_args("nvbandwidth_h2d"),
          measure.nvbandwidth("nvbandwidth_h2d")),
    Probe("nvbandwidth_d2h", "run", "nvbandwidth", nvbandwidth_args("nvbandwidth_d2h"),
          measure.nvbandwidth("nvbandwidth_d2h")),
    Probe("nccl_single_node", "run", "all_reduce_perf", nccl_single_args, measure.nccl("nccl_single_node")),
    Probe("iperf3_tcp", "iperf3", "iperf3", iperf3_args, measure.iperf3),
    Probe("ib_write_bw", "per_hca", "ib_write_bw", ib_args, measure.ib_write_bw),
    Probe("nccl_multi_node", "launcher", "mpirun", nccl_multi_args, measure.nccl("nccl_multi_node")),
    Probe("fio_seq_write", "fio", "fio", fio_args("fio_seq_write", "write", "1M"), measure.fio("fio_seq_write")),
    Probe("fio_seq_read", "fio", "fio", fio_args("fio_seq_read", "read", "1M"), measure.fio("fio_seq_read")),
    Probe("fio_rand_write", "fio", "fio", fio_args("fio_rand_write", "randwrite", "4k"),
          measure.fio("fio_rand_write")),
    Probe("fio_rand_read", "fio", "fio", fio_args("fio_rand_read", "randread", "4k"),
          measure.fio("fio_rand_read")),
    # Repeated runs record each iteration's status in their raw output.
    Probe("reference_job", "repeat", None, None, measure.repeated("reference_job"), rc_is_verdict=False),
    Probe("soak", "repeat", None, None, measure.repeated("soak"), rc_is_verdict=False),
    # The counters and kernel log of before the GPU phase (phases.run_gate) against those after the soak.
    Probe("soak_errors", "window", "nvidia-smi", fixed(*gpu_load.COUNTER_ARGS), gpu_load.soak_errors),
)


def probe_by_name(name):
    for probe in PROBES:
        if probe.name == name:
            return probe
    raise KeyError(name)
