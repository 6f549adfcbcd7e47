# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Warm-pool policy: keep K validated nodes of each SKU ready ahead of demand.

Pure functions over ledger records: ``plan_refill`` says which nodes to provision now
(deficit) and how many ready nodes exceed the ceiling (surplus); it never acts.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LifecycleError

__all__ = ["validate_policy", "plan_refill"]

_KEYS = ("sku", "tier", "min_ready", "max_ready")


def _check_entry(index, entry):
    if not isinstance(entry, dict) or not entry.get("sku"):
        raise LifecycleError("Warm-pool policy entry %d has no sku. Each entry needs sku and "
                             "min_ready (optional tier, max_ready)." % index, entry=index)
    unknown = sorted(set(entry) - set(_KEYS))
    if unknown:
        raise LifecycleError("Warm-pool policy entry %d (%s) has unknown keys %s. Allowed: %s."
                             % (index, entry["sku"], unknown, ", ".join(_KEYS)), entry=index)
    low = entry.get("min_ready")
    high = entry.get("max_ready", low)
    if not isinstance(low, int) or low < 0 or not isinstance(high, int) or high < low:
        raise LifecycleError(
            "Warm-pool policy entry %d (%s) needs integers 0 <= min_ready <= max_ready "
            "(got min_ready=%r, max_ready=%r)." % (index, entry["sku"], low, high), entry=index)
    return {"sku": entry["sku"], "tier": entry.get("tier", "default"),
            "min_ready": low, "max_ready": high}


def validate_policy(policy):
    """Normalised policy entries; one entry per (sku, tier)."""
    seen = set()
    out = []
    for index, entry in enumerate(policy or []):
        normal = _check_entry(index, entry)
        key = (normal["sku"], normal["tier"])
        if key in seen:
            raise LifecycleError("Warm-pool policy lists sku %s tier %s twice. Merge the entries."
                                 % key, entry=index)
        seen.add(key)
        out.append(normal)
    return out


def plan_refill(policy, records):
    """Per policy entry: ready count, deficit, nodes to provision, surplus.

    ``records`` are ledger node records. Only free (unreserved) nodes count: a node
    held by a gang is not in the pool. A record may carry ``tier`` (from the inventory);
    without one it belongs to tier ``default``. Nodes already in flight count toward the target
    so a refill is not started twice.
    """
    plans = []
    for entry in validate_policy(policy):
        mine = [r for r in records if r.get("sku") == entry["sku"] and not r.get("gang_id")
                and r.get("tier", "default") == entry["tier"]]
        # hot nodes are validated too (and already known to the scheduler): they are in the pool
        ready = sorted(r["node"] for r in mine if r["state"] in states.ADMISSIBLE)
        flight = sorted(r["node"] for r in mine if r["state"] in states.IN_PROGRESS)
        spare = sorted(r["node"] for r in mine if r["state"] in states.PROVISIONABLE)
        deficit = max(0, entry["min_ready"] - len(ready) - len(flight))
        plans.append(dict(entry, ready=ready, in_flight=flight, deficit=deficit,
                          provision=spare[:deficit], shortfall=max(0, deficit - len(spare)),
                          surplus=max(0, len(ready) - entry["max_ready"])))
    return plans
