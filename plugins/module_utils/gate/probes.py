# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""How each probe runs: argument builders and collectors (``catalog.PROBES`` names them).

A probe is one tool invocation (or one input) whose raw output is saved as
``raw/<probe>.txt`` (per-item probes such as ``ib_write_bw`` save
``raw/<probe>.<item>.txt``). ``collect`` produces the raw outputs (``ToolRun``s) by the
probe's mode; the extract functions (``measure.py``) turn them into measured values.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import socket

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.attestation import IMAGE_RELEASE_PATH
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.runner import MISSING, ToolRun
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.soak import run_repeated
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.tpm import collect_quote
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.units import parse_size

__all__ = ["NVSMI_FIELDS", "NVB_TESTCASES", "collect", "describe", "fixed", "nvidia_smi_args", "dcgm_args",
           "gpu_burn_args", "nvbandwidth_args", "nccl_single_args", "nccl_multi_args", "iperf3_args", "ib_args",
           "fio_args"]

NVSMI_FIELDS = ("index,name,pci.bus_id,driver_version,ecc.errors.uncorrected.volatile.total,retired_pages.sbe,"
                "retired_pages.dbe,retired_pages.pending,remapped_rows.pending,remapped_rows.failure")
NVB_TESTCASES = {
    "nvbandwidth_d2d": "device_to_device_memcpy_read_ce",
    "nvbandwidth_h2d": "host_to_device_memcpy_ce",
    "nvbandwidth_d2h": "device_to_host_memcpy_ce",
}


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
    return fixed("-t", NVB_TESTCASES[check])


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
