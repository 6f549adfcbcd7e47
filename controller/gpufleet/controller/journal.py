"""What the controller writes down around every action: intent before, outcome after.

The intent row (a decision with no outcome) is committed before a playbook is started, so
a controller killed at any instant leaves a record of every action that may have touched a
machine. A restarted controller resumes those (the playbooks converge from the ledger's
recorded state and skip the steps already done) instead of planning them again.
"""
from collections import Counter

from gpufleet.controller import records
from gpufleet.work import codec

__all__ = ["demand_summary", "supply_summary", "Journal"]


def demand_summary(jobs, pool):
    pending = [j for j in jobs if j.pool == pool and j.state == "PENDING"]
    return {"pending_jobs": len(pending), "pending_nodes": sum(j.nodes for j in pending),
            "running_jobs": sum(1 for j in jobs if j.pool == pool and j.state != "PENDING"),
            "jobs": [j.job_id for j in pending][:20]}


def supply_summary(nodes, pool):
    return dict(Counter(n.tier for n in nodes if n.pool == pool))


class Journal:
    def __init__(self, ledger, controller_id):
        self.ledger = ledger
        self.controller_id = controller_id

    def intent(self, action, jobs, nodes, now):
        """Record the decision (time, pool, demand seen, supply seen, action, reason); its id."""
        demand = demand_summary(jobs, action.pool)
        # what a restarted controller needs to resume the action exactly (the decisions table
        # has columns for kind, nodes and job only)
        demand["action"] = codec.encode(action)
        return records.record_decision(self.ledger, self.controller_id, action, demand,
                                       supply_summary(nodes, action.pool), at=now)

    def outcome(self, decision_id, text):
        records.set_outcome(self.ledger, decision_id, text)

    def unfinished(self):
        """Decisions recorded without an outcome: in flight when a controller stopped."""
        return records.open_decisions(self.ledger)

    def demand(self, jobs, pools, now):
        """Per pool for this minute: GPUs running, pending, pending for lack of capacity."""
        for pool in pools:
            mine = [j for j in jobs if j.pool == pool]
            gpus = lambda js: sum(j.nodes * max(j.gpus_per_node, 1) for j in js)   # noqa: E731
            pending = [j for j in mine if j.state == "PENDING"]
            lacking = [j for j in pending if j.reason in ("Resources", "Nodes_required_for_job_are_DOWN",
                                                          "ReqNodeNotAvail", "PartitionNodeLimit")
                       or j.reason.startswith("ReqNodeNotAvail")]
            records.record_demand(self.ledger, pool, now, gpus([j for j in mine if j.state != "PENDING"]),
                                  gpus(pending), gpus(lacking))
