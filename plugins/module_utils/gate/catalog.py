# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The gate catalog: every check's facts, declared once.

``CHECKS`` holds one ``CheckSpec`` per check: its phase, how it is judged (``kind``), the
canonical unit parsers return, the largest plausible limit, whether it may retry, the
profile keys it takes and the probe that measures it. The probe (``probes.PROBES``) says
how the tool runs and which extractor and parser read its output; a probe's phase,
checks and retry flag are derived from this table, never declared again. Profiles
(``profile.py``) are validated against it; judging reads the ``CheckSpec`` a profile's
threshold carries.

This module is plain data with no gate imports, so every other gate module may import it.
Adding a check: one ``CheckSpec`` row here (and a ``probes.PROBES`` row when a new tool
feeds it), its extractor and parser, and the profile lines.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import dataclasses
from typing import Optional

__all__ = ["PHASES", "GATE_PHASES", "HEALTH_CHECKS", "HEALTH_DCGM_LEVEL", "KINDS", "CheckSpec", "CHECKS", "LOCAL_CHECKS", "check_spec"]

PHASES = ("attestation", "gpu", "nvlink", "fabric", "storage", "reference", "soak", "health")
# The acceptance gate: every phase run when none is chosen. ``health`` is not one of them: it is
# the short idle check the day-2 controller runs alone on nodes in service (docs/day2.md).
GATE_PHASES = PHASES[:-1]
# What the health phase may hold: reads that take seconds and DCGM at level 1 (about a minute),
# never a load test, so it fits between jobs on an idle node.
HEALTH_CHECKS = ("xid", "ecc_uncorrectable", "row_remap_pending", "row_remap_failures",
                 "retired_pages_pending", "dcgm_diag")
HEALTH_DCGM_LEVEL = 1
# How a check is judged (judging.py); "local" checks are judged by the gate itself and
# never appear in a profile (the image release always, the TPM quote when asked for).
KINDS = ("min", "max", "equals", "one_of", "deny", "pins", "all_pass", "local")


@dataclasses.dataclass(frozen=True)
class CheckSpec:
    """One check. ``unit``: the unit parsers return (None = the profile chooses, e.g. a job metric).

    ``upper``: the largest plausible limit in ``unit`` (a floor above it can never be met).
    ``params``: (profile key, value kind) pairs, kinds ``("int", low, high)``, ``("size",)``,
    ``("names",)``, ``("str",)``, ``("bool",)``.
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
    CheckSpec("image_release", "attestation", "local", "version", "image_release"),
    CheckSpec("firmware_pins", "attestation", "pins", "version", "firmware"),
    CheckSpec("tpm_quote", "attestation", "local", "pcr", "tpm_quote"),
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
    # Slowdown time (HW slowdown, HW/SW thermal, HW power brake) per GPU during gpu-burn; gpu_load.py.
    CheckSpec("clock_events", "gpu", "max", "us", "gpu_burn", upper=86400e6,
              params=(("min_sm_clock_mhz", ("int", 1, 5000)),)),
    CheckSpec("nvswitch_fabric", "nvlink", "min", "gpus", "nvswitch_fabric", upper=72,
              params=(("fabric_manager", ("bool",)),)),
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
    # Uncorrectable ECC errors gained per GPU from before the GPU phase to after the soak; the
    # parameters bound the other counters over the same window (gpu_load.py).
    CheckSpec("soak_errors", "soak", "max", "count", "soak_errors", upper=1e6,
              params=(("max_correctable", ("int", 0, 1000000)), ("max_remap_pending", ("int", 0, 72)),
                      ("max_remap_failures", ("int", 0, 72)), ("max_new_xids", ("int", 0, 10000)))),
)
_BY_NAME = dict((spec.name, spec) for spec in CHECKS)
LOCAL_CHECKS = tuple(spec.name for spec in CHECKS if not spec.in_profile)


def check_spec(name):
    """The ``CheckSpec`` of ``name``; KeyError for a name the catalog does not hold."""
    return _BY_NAME[name]
