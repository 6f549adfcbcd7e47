"""Bring-up latencies per tier and the gate failure probability, as seeded distributions.

A latency file (YAML) names a distribution per path to schedulable, plus the rest:

    seed: 1
    hot:  {dist: fixed, seconds: 5}                   # hot -> schedulable (resume / admit)
    warm: {dist: lognormal, median: 420, sigma: 0.35} # warm (parked) -> hot: power on, POST, boot, register
    regate: {dist: lognormal, median: 900, sigma: 0.2} # added to a wake when the node's gate is stale
    cold: {dist: uniform, low: 1200, high: 2400}      # cold -> hot: the full bring-up with the gate
    repair: {dist: fixed, seconds: 259200}            # break_fix -> cold (a person repairs it)
    recycle: {dist: fixed, seconds: 1800}             # failed gate -> cold again (recycling)
    gate_failure: 0.02                                # probability a gate run (bring-up, re-gate) fails

Missing keys take the preset's value (``baremetal`` unless the file says ``preset: lab``).
The presets and their sources are in docs/capacity.md ("Latency defaults").
"""
import math
import random

from ansible_collections.gpufleet.baremetal.plugins.module_utils import strict_yaml
from ansible_collections.gpufleet.baremetal.plugins.module_utils.strict_yaml import StrictYamlError
from gpufleet.simulate.errors import SimulateError

__all__ = ["Distribution", "Latency", "PRESETS", "load_latency"]

PATHS = ("hot", "warm", "regate", "cold", "repair", "recycle")
DISTS = {"fixed": ("seconds",), "uniform": ("low", "high"), "lognormal": ("median", "sigma")}

# Sources and reasoning per number: docs/capacity.md, "Latency defaults".
PRESETS = {
    "baremetal": {
        "hot": {"dist": "lognormal", "median": 5, "sigma": 0.3},
        "warm": {"dist": "lognormal", "median": 420, "sigma": 0.35},
        "regate": {"dist": "lognormal", "median": 900, "sigma": 0.2},
        "cold": {"dist": "lognormal", "median": 1800, "sigma": 0.3},
        "repair": {"dist": "fixed", "seconds": 3 * 86400},
        "recycle": {"dist": "lognormal", "median": 1800, "sigma": 0.3},
        "gate_failure": 0.02,
    },
    "lab": {
        "hot": {"dist": "uniform", "low": 1, "high": 3},
        "warm": {"dist": "uniform", "low": 15, "high": 30},
        "regate": {"dist": "uniform", "low": 60, "high": 70},
        "cold": {"dist": "uniform", "low": 230, "high": 300},
        "repair": {"dist": "fixed", "seconds": 3600},
        "recycle": {"dist": "uniform", "low": 230, "high": 300},
        "gate_failure": 0.0,
    },
}


class Distribution:
    """One latency distribution in seconds; ``sample(rng)`` draws from it."""

    def __init__(self, name, spec, where):
        if not isinstance(spec, dict) or spec.get("dist") not in DISTS:
            raise SimulateError("%s: %s needs dist: one of %s (got %r)." % (where, name, ", ".join(DISTS), spec))
        self.kind = spec["dist"]
        params = {}
        for key in DISTS[self.kind]:
            value = spec.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or math.isnan(value):
                raise SimulateError("%s: %s.%s must be a number >= 0 (got %r)." % (where, name, key, value))
            params[key] = float(value)
        extra = sorted(set(spec) - set(DISTS[self.kind]) - {"dist"})
        if extra:
            raise SimulateError("%s: %s has unknown key(s) %s for dist %s; it takes %s."
                                % (where, name, ", ".join(extra), self.kind, ", ".join(DISTS[self.kind])))
        if self.kind == "uniform" and params["low"] > params["high"]:
            raise SimulateError("%s: %s.low (%g) is above %s.high (%g). Swap them." % (where, name, params["low"], name, params["high"]))
        if self.kind == "lognormal" and params["median"] <= 0:
            raise SimulateError("%s: %s.median must be above 0." % (where, name))
        self.params = params

    def sample(self, rng):
        p = self.params
        if self.kind == "fixed":
            return p["seconds"]
        if self.kind == "uniform":
            return rng.uniform(p["low"], p["high"])
        return rng.lognormvariate(math.log(p["median"]), p["sigma"])

    def describe(self):
        return "%s(%s)" % (self.kind, ", ".join("%s=%g" % kv for kv in self.params.items()))


class Latency:
    """The distributions of one run and its seeded random source."""

    def __init__(self, spec, where="latency"):
        preset = spec.get("preset", "baremetal")
        if preset not in PRESETS:
            raise SimulateError("%s: preset %r is unknown; use one of %s." % (where, preset, ", ".join(PRESETS)))
        unknown = sorted(set(spec) - set(PATHS) - {"seed", "gate_failure", "preset"})
        if unknown:
            raise SimulateError("%s: unknown key(s) %s. Allowed: preset, seed, gate_failure, %s."
                                % (where, ", ".join(unknown), ", ".join(PATHS)))
        merged = dict(PRESETS[preset], **spec)
        self.preset = preset
        self.paths = {name: Distribution(name, merged[name], where) for name in PATHS}
        failure = merged["gate_failure"]
        if isinstance(failure, bool) or not isinstance(failure, (int, float)) or not 0 <= failure < 1:
            raise SimulateError("%s: gate_failure must be a probability in [0, 1) (got %r)." % (where, failure))
        self.gate_failure = float(failure)
        seed = merged.get("seed", 1)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise SimulateError("%s: seed must be an integer (got %r)." % (where, seed))
        self.seed = seed
        self.rng = random.Random(seed)

    def sample(self, path):
        return self.paths[path].sample(self.rng)

    def gate_fails(self):
        return self.gate_failure > 0 and self.rng.random() < self.gate_failure

    def describe(self):
        out = {name: dist.describe() for name, dist in self.paths.items()}
        out.update(preset=self.preset, seed=self.seed, gate_failure=self.gate_failure)
        return out


def load_latency(path=None):
    """A Latency from a YAML file, a preset name (``baremetal``, ``lab``) or the default."""
    if path is None or path in PRESETS:
        return Latency({"preset": path or "baremetal"}, where=path or "default latency")
    try:
        spec = strict_yaml.load_file(path)
    except StrictYamlError as exc:     # unreadable, not UTF-8, not valid YAML, a key twice, ...
        raise SimulateError("Latency file %s." % exc.msg) from None
    if not isinstance(spec, dict):
        raise SimulateError("Latency file %s must be a mapping (hot, warm, cold, gate_failure, seed)." % path)
    return Latency(spec, where=path)
