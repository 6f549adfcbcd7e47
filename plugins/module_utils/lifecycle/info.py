# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""What ``ledger_info`` reads: node records, history, a gang, the consistency check, the
capacity controller's recent decisions, demand history, a lease's holder, a pool's rollouts
and the nodes' attestation enrollments (read-only)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import decisions as decision_log
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import enrollments as enrollment_log
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import gang, lease as leases, ledger_admin
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import rollouts as rollout_log

__all__ = ["read"]


def read(book, nodes=None, sku=None, history=False, gang_id=None, check=False, decisions=0,
         demand_pool=None, lease=None, rollouts=None, enrollments=False):
    """The ``ledger_info`` result (always ``changed: false``)."""
    wanted = set(nodes) if nodes is not None else None
    records = [r for r in book.nodes(sku=sku) if wanted is None or r["node"] in wanted]
    result = {"changed": False, "nodes": records,
              "states": dict((r["node"], r["state"]) for r in records)}
    if history:
        names = set(r["node"] for r in records)
        result["history"] = [h for h in book.history() if h["node"] in names]
    if gang_id:
        result["gang"] = gang.status(book, gang_id)
    if check:
        result["problems"] = ledger_admin.check(book)
    if decisions:
        result["decisions"] = decision_log.decisions(book, limit=decisions)
    if demand_pool:
        result["demand"] = decision_log.demand_history(book, pool=demand_pool)
    if lease:
        holder, expires_at = leases.lease_holder(book, lease, book.clock())
        result["lease"] = {"name": lease, "holder": holder, "expires_at": expires_at}
    if rollouts:
        result["rollouts"] = rollout_log.rollouts(book, pool=rollouts)
    if enrollments:
        names = set(r["node"] for r in records)
        result["enrollments"] = dict((e["node"], e) for e in enrollment_log.history(book)
                                     if e["node"] in names and e["replaced_at"] is None)
    return result
