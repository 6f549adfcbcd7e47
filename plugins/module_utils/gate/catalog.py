# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The gate catalog: every check and every probe, each fact declared once.

``CHECKS`` holds one ``CheckSpec`` per check: its phase, how it is judged (``kind``), the
canonical unit parsers return, the largest plausible limit, whether it may retry, the
profile keys it takes and the probe that measures it. ``PROBES`` holds one ``Probe`` per
tool invocation, in run order: how it runs (``mode``, ``tool``, ``args``) and how its
output becomes measured values (``extract``, which calls the parser). A probe's phase,
checks and retry flag are derived from ``CHECKS``, never declared again.

Adding a check: one ``CheckSpec`` row here (plus a ``Probe`` row when a new tool feeds
it), its parser and extractor, and the profile lines.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import dataclasses
from typing import Callable, Optional

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate import measure, probes
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.attestation import (
    extract_firmware, extract_image_release)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.tpm import extract_tpm_quote

__all__ = ["PHASES", "KINDS", "CheckSpec", "CHECKS", "Probe", "PROBES", "LOCAL_CHECKS", "check_spec",
           "probe_by_name"]

PHASES = ("attestation", "gpu", "nvlink", "fabric", "storage", "reference", "soak")
# How a check is judged (judging.py); "local" checks are judged by the gate itself and
# never appear in a profile (the image release always, the TPM quote when asked for).
KINDS = ("min", "max", "equals", "one_of", "deny", "pins", "all_pass", "local")


@dataclasses.dataclass(frozen=True)
class CheckSpec:
    """One check. ``unit``: the unit parsers return (None = the profile chooses, e.g. a job metric).

    ``upper``: the largest plausible limit in ``unit`` (a floor above it can never be met).
    ``params``: (profile key, value kind) pairs, kinds ``("int", low, high)``, ``("size",)``,
    ``("names",)``, ``("str",)``.
    """

    name: str
    phase: str
    kind: str
    unit: Optional[str]
    probe: str
    retryable: bool = False
    upper: Optional[float] = None
    params: tuple = ()

    @property
    def in_profile(self):
        return self.kind != "local"

    def param_kinds(self):
        return dict(self.params)


_FIO = (("size", ("size",)), ("runtime_s", ("int", 1, 3600)))
_JOB = (("duration_s", ("int", 1, 604800)), ("metric", ("str",)), ("command", ("str",)))
_NCCL = (("message_size", ("size",)), ("min_message_size", ("size",)))

CHECKS = (
    CheckSpec("image_release", "attestation", "local", None, "image_release"),
    CheckSpec("firmware_pins", "attestation", "pins", "version", "firmware"),
    CheckSpec("tpm_quote", "attestation", "local", None, "tpm_quote"),
    CheckSpec("gpu_count", "gpu", "equals", "count", "nvidia_smi_query", upper=72),
    CheckSpec("gpu_model", "gpu", "one_of", "name", "nvidia_smi_query"),
    CheckSpec("ecc_uncorrectable", "gpu", "max", "count", "nvidia_smi_query", upper=1e6),
    CheckSpec("retired_pages", "gpu", "max", "pages", "nvidia_smi_query", upper=1e6),
    CheckSpec("retired_pages_pending", "gpu", "max", "gpus", "nvidia_smi_query", upper=72),
    CheckSpec("row_remap_pending", "gpu", "max", "gpus", "nvidia_smi_query", upper=72),
    CheckSpec("row_remap_failures", "gpu", "max", "gpus", "nvidia_smi_query", upper=72),
    CheckSpec("xid", "gpu", "deny", "xid", "dmesg"),
    CheckSpec("dcgm_diag", "gpu", "all_pass", "tests", "dcgm_diag",
              params=(("level", ("int", 1, 4)), ("required", ("names",)), ("allow_warnings", ("names",)),
                      ("allow_skips", ("names",)))),
    CheckSpec("gpu_burn", "gpu", "min", "gpus", "gpu_burn", upper=72, params=(("duration_s", ("int", 10, 86400)),)),
    CheckSpec("nvlink_links", "nvlink", "min", "links", "nvidia_smi_nvlink", upper=36),
    CheckSpec("nvbandwidth_d2d", "nvlink", "min", "GB/s", "nvbandwidth_d2d", True, 2000),
    CheckSpec("nvbandwidth_h2d", "nvlink", "min", "GB/s", "nvbandwidth_h2d", True, 256),
    CheckSpec("nvbandwidth_d2h", "nvlink", "min", "GB/s", "nvbandwidth_d2h", True, 256),
    CheckSpec("nccl_single_node", "nvlink", "min", "GB/s", "nccl_single_node", True, 2000, _NCCL),
    CheckSpec("iperf3_tcp", "fabric", "min", "Gb/s", "iperf3_tcp", True, 1600, (("duration_s", ("int", 1, 3600)),)),
    CheckSpec("ib_write_bw", "fabric", "min", "Gb/s", "ib_write_bw", True, 1600, (("hcas", ("int", 1, 64)),)),
    CheckSpec("nccl_multi_node", "fabric", "min", "GB/s", "nccl_multi_node", True, 2000,
              _NCCL + (("nodes", ("int", 2, 100000)),)),
    CheckSpec("fio_seq_write", "storage", "min", "MB/s", "fio_seq_write", True, 200000, _FIO),
    CheckSpec("fio_seq_read", "storage", "min", "MB/s", "fio_seq_read", True, 200000, _FIO),
    CheckSpec("fio_rand_write", "storage", "min", "IOPS", "fio_rand_write", True, 5e7, _FIO),
    CheckSpec("fio_rand_read", "storage", "min", "IOPS", "fio_rand_read", True, 5e7, _FIO),
    CheckSpec("reference_job", "reference", "min", None, "reference_job", params=_JOB),
    CheckSpec("soak", "soak", "min", None, "soak", params=_JOB),
)
_BY_NAME = dict((spec.name, spec) for spec in CHECKS)
LOCAL_CHECKS = tuple(spec.name for spec in CHECKS if not spec.in_profile)


@dataclasses.dataclass(frozen=True)
class Probe:
    """One tool invocation (or input) whose raw output is saved as ``raw/<name>.txt``.

    ``mode`` picks the collector (probes.collect); ``args(ctx)`` builds the argument list;
    ``extract(texts, ctx)`` parses the saved outputs into {check: (measured, details)}.
    ``rc_is_verdict`` False: the exit status is not a verdict (dcgmi exits non-zero when a
    test fails and its JSON says which; gpu-burn's exit code is unreliable).
    """

    name: str
    mode: str
    tool: Optional[str]
    args: Optional[Callable]
    extract: Callable
    rc_is_verdict: bool = True

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
    Probe("nvidia_smi_query", "run", "nvidia-smi", probes.nvidia_smi_args, measure.nvidia_smi_query),
    Probe("dmesg", "run", "dmesg", probes.fixed(), measure.kernel_log),
    Probe("dcgm_diag", "run", "dcgmi", probes.dcgm_args, measure.dcgm_diag, rc_is_verdict=False),
    Probe("gpu_burn", "run", "gpu_burn", probes.gpu_burn_args, measure.gpu_burn, rc_is_verdict=False),
    Probe("nvidia_smi_nvlink", "run", "nvidia-smi", probes.fixed("nvlink", "--status"), measure.nvlink_status),
    Probe("nvbandwidth_d2d", "run", "nvbandwidth", probes.nvbandwidth_args("nvbandwidth_d2d"),
          measure.nvbandwidth("nvbandwidth_d2d")),
    Probe("nvbandwidth_h2d", "run", "nvbandwidth", probes.nvbandwidth_args("nvbandwidth_h2d"),
          measure.nvbandwidth("nvbandwidth_h2d")),
    Probe("nvbandwidth_d2h", "run", "nvbandwidth", probes.nvbandwidth_args("nvbandwidth_d2h"),
          measure.nvbandwidth("nvbandwidth_d2h")),
    Probe("nccl_single_node", "run", "all_reduce_perf", probes.nccl_single_args, measure.nccl("nccl_single_node")),
    Probe("iperf3_tcp", "iperf3", "iperf3", probes.iperf3_args, measure.iperf3),
    Probe("ib_write_bw", "per_hca", "ib_write_bw", probes.ib_args, measure.ib_write_bw),
    Probe("nccl_multi_node", "launcher", "mpirun", probes.nccl_multi_args, measure.nccl("nccl_multi_node")),
    Probe("fio_seq_write", "fio", "fio", probes.fio_args("fio_seq_write", "write", "1M"), measure.fio("fio_seq_write")),
    Probe("fio_seq_read", "fio", "fio", probes.fio_args("fio_seq_read", "read", "1M"), measure.fio("fio_seq_read")),
    Probe("fio_rand_write", "fio", "fio", probes.fio_args("fio_rand_write", "randwrite", "4k"),
          measure.fio("fio_rand_write")),
    Probe("fio_rand_read", "fio", "fio", probes.fio_args("fio_rand_read", "randread", "4k"),
          measure.fio("fio_rand_read")),
    # Repeated runs record each iteration's status in their raw output.
    Probe("reference_job", "repeat", None, None, measure.repeated("reference_job"), rc_is_verdict=False),
    Probe("soak", "repeat", None, None, measure.repeated("soak"), rc_is_verdict=False),
)


def check_spec(name):
    """The ``CheckSpec`` of ``name``; KeyError for a name the catalog does not hold."""
    return _BY_NAME[name]


def probe_by_name(name):
    for probe in PROBES:
        if probe.name == name:
            return probe
    raise KeyError(name)
