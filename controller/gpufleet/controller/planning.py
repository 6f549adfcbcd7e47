"""The controller's one door to the planner (gpufleet.capacity): policy, pool mapping, plan.

The controller never decides anything itself; it asks these functions. Keeping the
planner's names here keeps a change of its API a change of this file.
"""
from gpufleet.capacity import model

__all__ = ["Planning"]


class Planning:
    """The loaded policy and the planner's functions bound to it."""

    def __init__(self, policy_path):
        from gpufleet.capacity import policy as capacity_policy
        self._policy_mod = capacity_policy
        self.policy = capacity_policy.load_policy(policy_path)
        self.path = policy_path

    def pool_of(self, host):
        """The pool an inventory host belongs to (members: inventory groups or labels), or None."""
        return self._policy_mod.pool_of_node(self.policy, host.name, host.groups, host.features)

    def map_jobs(self, jobs):
        """Jobs with ``pool`` filled in by the policy (None: no pool can ever serve it)."""
        return tuple(self._policy_mod.map_job(self.policy, job) for job in jobs)

    def gang_deadline(self, pool):
        return self._policy_mod.gang_deadline_s(self.policy, pool)

    def concurrency(self):
        return self._policy_mod.fleet_concurrency(self.policy)

    def plan(self, jobs, nodes, in_flight, now, history):
        from gpufleet.capacity.planner import plan
        return plan(model.Demand(jobs=tuple(jobs)), model.Supply(nodes=tuple(nodes), in_flight=tuple(in_flight)),
                    self.policy, now, history=history)
