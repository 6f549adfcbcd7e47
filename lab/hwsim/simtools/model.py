"""Lab-only hardware model: loads the per-node JSON model the shims print from.

SIMULATION ONLY. Nothing in a production path imports this. Stdlib only: the shims run
with nothing but python3 inside a Debian 12 lab node container.
"""
import hashlib
import json
import os
import tempfile

DEFAULT_MODEL = "/etc/gpufleet-lab/hwmodel.json"
DEFAULT_FLEET_DIR = "/etc/gpufleet-lab-fleet"

DEFAULTS = {
    "node": "lab-node",
    "gpus": {
        "count": 8,
        "model": "NVIDIA H100 80GB HBM3",
        "memory_mib": 81559,
        "driver_version": "550.54.15",
        "cuda_version": "12.4",
        "uuid_prefix": "GPU-5a1ab0",
    },
    "nvlink": {"links": 18, "link_gbps": 26.562, "d2d_gbps": 371.2, "h2d_gbps": 55.3, "d2h_gbps": 55.6},
    "nccl": {"single_node_busbw_gbps": 480.3, "multi_node_busbw_gbps": 370.5, "latency_us": 35.0},
    "hcas": [{"name": "mlx5_%d" % i, "rate_gbps": 400, "bw_gbps": 392.9} for i in range(8)],
    "burn": {"gflops": 51200},
    "faults": [],
}

FAULT_TYPES = ("missing_gpu", "faulty_gpu", "xid", "degraded_nvlink", "slow_hca", "ecc", "thermal_slowdown",
               "ecc_under_load", "fabric_down")
# What the node has lived through since its model was written (a driver load): seconds of
# gpu-burn and all_reduce_perf runs. The cumulative clock-event counters and the ECC errors a
# GPU gains under load are computed from it. A new model (other faults) starts it afresh.
DEFAULT_STATE = "/tmp/gpufleet-hwsim-state.json"
# Share of gpu-burn time a healthy H100 spends at its power cap (real H100 at full load: SW power
# cap active, ~699 W of 700 W, SM clock 1380-1440 MHz of 1980), and a thermal_slowdown fault's
# default share in HW and SW thermal slowdown.
POWER_CAP_SHARE = 0.97
THERMAL_SHARE = 0.4
LOADED_SM_MHZ = 1410
IDLE_SM_MHZ = 345
MAX_SM_MHZ = 1980


class ModelError(Exception):
    """The hardware model file is missing or invalid."""


def _merge(base, override):
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            out[key] = _merge(base[key], value)
        else:
            out[key] = value
    return out


def load_model(path=None):
    """Load the node's model: ``GPUFLEET_HWSIM_MODEL`` or the default path, merged over DEFAULTS."""
    path = path or os.environ.get("GPUFLEET_HWSIM_MODEL") or DEFAULT_MODEL
    try:
        with open(path) as handle:
            raw = json.load(handle)
    except (OSError, ValueError) as exc:
        raise ModelError("hwsim: cannot read hardware model %s: %s" % (path, exc))
    model = _merge(DEFAULTS, raw)
    for fault in model["faults"]:
        if fault.get("type") not in FAULT_TYPES:
            raise ModelError("hwsim: unknown fault %r in %s; known: %s" % (fault, path, ", ".join(FAULT_TYPES)))
    key = hashlib.sha256((os.path.abspath(path) + json.dumps(raw, sort_keys=True)).encode("utf-8")).hexdigest()
    return Model(model, key)


def load_peer(name):
    """Load a peer node's model from the fleet directory (the lab mounts every node's model there).

    Both layouts work: ``<fleet>/<node>.json`` and the lab's ``<fleet>/<node>/hwmodel.json``.
    """
    fleet = os.environ.get("GPUFLEET_HWSIM_FLEET_DIR", DEFAULT_FLEET_DIR)
    flat = os.path.join(fleet, name + ".json")
    return load_model(flat if os.path.exists(flat) else os.path.join(fleet, name, "hwmodel.json"))


class Model(object):
    """Read access to a node model with the faults applied."""

    def __init__(self, data, key=""):
        self.data = data
        self.gpus = data["gpus"]
        self.key = key

    # -- load history (state file) --

    def _state_path(self):
        return os.environ.get("GPUFLEET_HWSIM_STATE") or DEFAULT_STATE

    def state(self):
        """The load this model's node has run: {"burn_s": seconds, "nccl_runs": n}."""
        try:
            with open(self._state_path()) as handle:
                state = json.load(handle)
        except (OSError, ValueError):
            state = {}
        if state.get("key") != self.key:
            return {"key": self.key, "burn_s": 0.0, "nccl_runs": 0}
        return state

    def record(self, field, amount):
        """Add ``amount`` to a state field; a read-only /tmp leaves the node looking unloaded."""
        state = self.state()
        state[field] = state.get(field, 0) + amount
        path = self._state_path()
        try:
            handle, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".hwsim-state.")
            with os.fdopen(handle, "w") as out:
                json.dump(state, out)
            os.replace(tmp, path)
        except OSError:
            pass

    def thermal_share(self, index):
        """Share of load time GPU ``index`` spends in thermal slowdown (0 = healthy)."""
        return max([float(f.get("share", THERMAL_SHARE)) for f in self.faults("thermal_slowdown")
                    if f.get("gpu") == index] or [0.0])

    def clock_counters(self, index):
        """Cumulative microseconds per clock-event reason, as ``nvidia-smi -q`` counts them."""
        burn_us = float(self.state().get("burn_s", 0)) * 1e6
        thermal = self.thermal_share(index)
        return {"sw_power_cap": int(burn_us * POWER_CAP_SHARE * (1 - thermal)), "sync_boost": 0,
                "sw_thermal_slowdown": int(burn_us * thermal), "hw_thermal_slowdown": int(burn_us * thermal / 2),
                "hw_power_brake_slowdown": 0}

    def loaded_reasons(self, index):
        """The clock-event reason mask and SM clock of GPU ``index`` under full load."""
        if self.thermal_share(index):
            return 0x8 | 0x20 | 0x40, 1095  # HW slowdown + SW and HW thermal slowdown
        return 0x4, LOADED_SM_MHZ  # SW power cap

    def fabric(self, index):
        """(State, Status) of GPU ``index``'s NVLink fabric registration. A fabric_down fault
        defaults to ("In Progress", "N/A"): what a GPU shows while it waits for a fabric manager
        that is not running (NVIDIA's Fabric Manager guide, as quoted in siderolabs/extensions#717)."""
        for fault in self.faults("fabric_down"):
            if fault.get("gpu") == index:
                return fault.get("state", "In Progress"), fault.get("status", "N/A")
        return "Completed", "Success"

    def faults(self, kind):
        return [f for f in self.data["faults"] if f.get("type") == kind]

    @property
    def node(self):
        return self.data["node"]

    def gpu_indexes(self):
        """Indexes of the GPUs the driver sees: a missing GPU is not enumerated at all."""
        missing = set(f.get("gpu") for f in self.faults("missing_gpu"))
        return [i for i in range(int(self.gpus["count"])) if i not in missing]

    def bus_id(self, index):
        return "00000000:%02X:00.0" % (0x18 + 0x10 * index)

    def uuid(self, index):
        return "%s-%04x-%04x-%04x-%012x" % (self.gpus["uuid_prefix"], index, 0x11 * index, 0xbeef, 0x5eed0000 + index)

    def nvlink_factor(self, index):
        """Bandwidth factor of a GPU's NVLinks (1.0 = healthy)."""
        factor = 1.0
        for fault in self.faults("degraded_nvlink"):
            if fault.get("gpu") == index:
                factor = min(factor, float(fault.get("factor", 0.5)))
        return factor

    def worst_nvlink_factor(self):
        return min([self.nvlink_factor(i) for i in self.gpu_indexes()] or [1.0])

    def is_faulty(self, index):
        return any(f.get("gpu") == index for f in self.faults("faulty_gpu"))

    def ecc(self, index):
        """Volatile ECC counts; an ecc_under_load fault adds its errors once all_reduce_perf has run."""
        counts = {"corrected": 0, "uncorrected": 0}
        loaded = self.faults("ecc_under_load") if self.state().get("nccl_runs", 0) else []
        for fault in self.faults("ecc") + loaded:
            if fault.get("gpu") == index:
                counts["corrected"] += int(fault.get("corrected", 0))
                counts["uncorrected"] += int(fault.get("uncorrected", 0))
        return counts

    def hcas(self):
        """HCAs with their measured bandwidth (a slow_hca fault overrides it)."""
        slow = dict((f.get("hca"), float(f.get("bw_gbps", 50.0))) for f in self.faults("slow_hca"))
        out = []
        for hca in self.data["hcas"]:
            item = dict(hca)
            if hca["name"] in slow:
                item["bw_gbps"] = slow[hca["name"]]
            out.append(item)
        return out

    def hca_factor(self):
        """Worst HCA bandwidth relative to its healthy value (1.0 = healthy)."""
        healthy = dict((h["name"], float(h["bw_gbps"])) for h in self.data["hcas"])
        return min([h["bw_gbps"] / healthy[h["name"]] for h in self.hcas()] or [1.0])
