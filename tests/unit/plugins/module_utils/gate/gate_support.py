"""Shared by the gate's profile, judging and catalog tests: a base profile and the shipped ones."""
import copy
import os

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.profile import (
    load_profile, profile_from_dict, profile_path)
from tests.helpers import ROOT, shared_fixture

SKU_PROFILES = ("h100-sxm-8x", "h200-sxm-8x", "b200-8x", "a100-sxm-8x")
PROFILES = SKU_PROFILES + ("lab",)
BASE = {"profile": "t", "checks": {
    "gpu_count": {"equals": 8, "unit": "count"},
    "gpu_model": {"one_of": ["NVIDIA H100 80GB HBM3"], "unit": "name"},
    "dcgm_diag": {"level": 3, "required": ["memory"], "unit": "tests"},
    "ecc_uncorrectable": {"max": 0, "unit": "count"},
    "row_remap_pending": {"max": 0, "unit": "gpus"},
    "xid": {"deny": [48, 79], "unit": "xid"},
    "firmware_pins": {"pins": {"BMC": "1.4.2", "BIOS": "2.10"}, "unit": "version"},
    "nvbandwidth_d2d": {"min": 335, "unit": "GB/s", "retries": 2},
    "nccl_single_node": {"min": 460, "unit": "GB/s", "message_size": "16G"},
    "ib_write_bw": {"min": 375, "unit": "Gb/s", "hcas": 2},
    "fio_seq_read": {"min": 2, "unit": "GB/s"},
    "soak": {"min": 100, "unit": "samples/s", "metric": "samples_per_s", "duration_s": 60},
}}


def profile(**overrides):
    data = copy.deepcopy(BASE)
    for check, spec in overrides.items():
        if spec is None:
            data["checks"].pop(check)
        else:
            data["checks"][check] = spec
    return profile_from_dict(data, "t")


def shipped_path(name):
    """profiles/gate/<name>.yml; the lab profile lives with the lab (lab/profiles/gate)."""
    return profile_path(name, os.path.join(ROOT, "lab") if name == "lab" else ROOT)


def load(name):
    return load_profile(shipped_path(name))


def shared_text(name):
    with open(shared_fixture("real-outputs", name)) as handle:
        return handle.read()
