"""From recorded decisions to playbook runs: batching, fabric peers, the steps before a run,
and each decision's outcome from the ledger afterwards.

The planner asks for one node per bring-up; the acceptance gate validates the fabric across a
set of nodes (2 in the lab profile), so the bring-ups started in one pass for one pool and
one fabric set (the inventory's ``gpufleet_fabric_set``; unset, the pool) run as ONE playbook
run, and known-good nodes of that pool and fabric set (hot or idle) are offered as fabric peers
for a set that would otherwise be short (a lone spare, a batch where one node failed early).
A batch's playbook fails when any member fails, so each decision's outcome is read from its
own nodes' ledger states, not from the run's exit code.
"""
from gpufleet.capacity import model
from gpufleet.controller import logs, records
from gpufleet.work.kinds import expected_state, playbook_for

__all__ = ["Launcher"]

_BATCHED = ("bringup",)
_PEER_TIERS = (model.HOT, model.IDLE)


class Launcher:
    def __init__(self, ledger, planning, actuator, journal, clock, say, fabric_set_of=lambda node: "",
                 image_vars=lambda pool: {}):
        self.ledger, self.planning, self.actuator, self.journal = ledger, planning, actuator, journal
        self.clock, self.say = clock, say
        self.fabric_set_of = fabric_set_of   # node -> its fabric set name ("" = the pool's)
        self.image_vars = image_vars         # pool -> the variables installing its image ({}: the files')

    def launch(self, pairs, views):
        """Start runs for recorded (decision id, action) pairs; ``views``: node -> NodeView."""
        groups = {}
        # no node of this launch is offered as a fabric peer (a park may start after the bring-up)
        launching = {n for _i, a in pairs for n in a.nodes}
        for decision_id, action in pairs:
            key = ((action.kind, action.pool, action.target_tier, self._fabric_set(action.nodes))
                   if action.kind in _BATCHED else decision_id)
            groups.setdefault(key, []).append((decision_id, action))
        for batch in groups.values():
            self._start(batch, views, launching)

    def _start(self, batch, views, launching=frozenset()):
        first = batch[0][1]
        playbook, extra = playbook_for(first)
        if not any(a.nodes for _i, a in batch):
            # e.g. a rollback of a gang none of whose members was ever started: only records
            for decision_id, action in batch:
                self._before(decision_id, action)
                self.journal.outcome(decision_id, "ok")
            return
        if playbook is None:
            for decision_id, action in batch:
                self.journal.outcome(decision_id, "failed: no playbook for action kind %r" % action.kind)
            return
        nodes = [n for _i, a in batch for n in a.nodes]
        extra["gpufleet_targets"] = ",".join(nodes)
        for decision_id, action in batch:
            self._before(decision_id, action)
        if first.kind == "bringup":
            extra["gpufleet_fabric_peers"] = self._peers(first.pool, nodes, views, launching)
        if first.kind in ("bringup", "recycle") and not first.image:
            # after a rollout the pool's image is its version, not the variable files'
            # (a rollout's own recycles carry theirs)
            extra.update(self.image_vars(first.pool))
        if playbook == "admit" and first.gang_id:
            # the ledger's gang is held to the policy's deadline, the one the planner holds it to
            # (admit.yml's default of 3600 s applies only to runs without the controller)
            extra["gpufleet_gang_deadline_seconds"] = int(self.planning.gang_deadline(first.pool))
        if first.kind == "wake":
            # re-gate only when a member's last gate result is past the policy's validity
            extra["gpufleet_wake_regate"] = not all(
                self.planning.gate_fresh(first.pool, getattr(views.get(n), "gate_passed_at", None), self.clock())
                for n in nodes)
        self.say("start %s %s on %s: %s" % (",".join(str(i) for i, _a in batch), first.kind, ",".join(nodes),
                                            first.reason),
                 reason=first.reason, **logs.action_fields(first, [i for i, _a in batch], event="start", nodes=nodes))
        self.actuator.submit_many(batch, playbook, extra)

    def _before(self, decision_id, action):
        if action.kind == "rollback" and records.gang_status(self.ledger, action.gang_id):
            records.gang_rollback(self.ledger, action.gang_id, action.reason)
        if action.kind == "bringup":
            # a failed node is brought up again through recycling (the ledger's retry edge);
            # its failure stays in the history, so the planner counts it. A hot or parked node
            # on another image than the pool's (after a rollout) is reimaged the same way.
            for node in action.nodes:
                state = (self.ledger.get(node) or {}).get("state")
                if state in (records.states.FAILED, records.states.HOT, records.states.PARKED):
                    why = "retry" if state == records.states.FAILED else "reimage"
                    records.transition(self.ledger, node, records.states.RECYCLING, "%s: %s" % (why, action.reason),
                                       run_id="ctl-%s" % decision_id)

    def _fabric_set(self, nodes):
        return self.fabric_set_of(nodes[0]) if nodes else ""

    def _peers(self, pool, nodes, views, launching):
        busy, fabric_set = self.actuator.busy_nodes() | launching, self._fabric_set(nodes)
        lent = self.actuator.lent_peers()
        # the playbook borrows peers in this order: nodes lent to no other run first (a run's
        # fabric phase stops the iperf3 server on its first peer when done)
        return sorted((n for n, v in views.items() if v.pool == pool and v.tier in _PEER_TIERS
                       and n not in nodes and n not in busy and self.fabric_set_of(n) == fabric_set),
                      key=lambda n: (n in lent, n))

    def settle(self, action, outcome, run_id=None):
        """The decision's outcome from its own nodes: a batch run fails when any member fails.

        A node still in a provisioning step once its run ended was dropped by Ansible as
        unreachable, without its rescue; when that was every target, Ansible ends the run before
        the playbook's last play records it. Record it failed here, so no node stays in a state
        nobody is working on (one machine action per node at a time: nothing else is)."""
        want = expected_state(action)
        if want is None:
            return outcome
        for node in action.nodes:
            state = (self.ledger.get(node) or {}).get("state")
            if state in records.states.IN_PROGRESS:
                try:
                    records.transition(self.ledger, node, records.states.FAILED,
                                       "%s stopped answering while %s: its %s run ended without recording it "
                                       "(Ansible dropped it as unreachable; %s)" % (node, state, action.kind, outcome),
                                       run_id=run_id)
                except records.LifecycleError:
                    pass   # recorded meanwhile by someone else: the outcome below reads what is there
        found = {n: (self.ledger.get(n) or {}) for n in action.nodes}
        wrong = {n: r for n, r in found.items() if r.get("state") != want}
        if not wrong:
            return "ok"
        return "failed: %s" % "; ".join("%s is %s (%s)" % (n, r.get("state"), (r.get("reason") or "")[:200])
                                        for n, r in sorted(wrong.items()))
