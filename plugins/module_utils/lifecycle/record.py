# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Record one state change for one or many nodes, all in one ledger transaction."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

__all__ = ["record_transition"]


def record_transition(ledger, nodes, target, who, why, **meta):
    """Apply ``target`` to every node atomically; result shaped for ``exit_json``.

    One illegal transition refuses the whole batch: nothing is written.
    """
    with ledger.transaction() as cur:
        per_node = [ledger.apply(cur, node, target, who, why, **meta) for node in nodes]
    before = dict((r["node"], r["before"]) for r in per_node)
    after = dict((r["node"], r["after"]) for r in per_node)
    result = {
        "changed": any(r["changed"] for r in per_node),
        "nodes": per_node,
        "diff": {"before": before, "after": after},
    }
    if len(per_node) == 1:
        result.update(state=per_node[0]["after"], before=per_node[0]["before"],
                      skipped_past=per_node[0]["skipped_past"])
    return result
