"""The controller's one door to the planner (gpufleet.capacity): policy, pools, tiers, plan.

The controller never decides anything itself; it asks these functions. Keeping the
planner's names here keeps a change of its API a change of this file.
"""
import fnmatch

from gpufleet.capacity import model

__all__ = ["Planning", "member_of"]


def member_of(members, host):
    """True when the pool's member rules (groups, name patterns, labels) claim the host."""
    if set(members.groups) & set(host.groups):
        return True
    if any(fnmatch.fnmatchcase(host.name, p) for p in members.patterns):
        return True
    labels = dict(f.split("=", 1) if "=" in f else (f, "true") for f in host.features)
    return bool(members.labels) and all(labels.get(k) == v for k, v in members.labels.items())


class Planning:
    """The loaded policy and the planner's functions bound to it."""

    def __init__(self, policy_path=None, policy=None):
        from gpufleet.capacity import policy as capacity_policy
        from gpufleet.controller.errors import ControllerError
        try:
            self.policy = policy if policy is not None else capacity_policy.load_policy(policy_path)
        except capacity_policy.PolicyError as exc:   # the planner's error names each field and fix
            raise ControllerError(str(exc))
        self.path = policy_path

    def pool_of(self, host):
        """The first pool (policy order) whose members claim the host, or None."""
        return next((name for name, pool in self.policy.pools.items() if member_of(pool.members, host)), None)

    def classify(self, pool, ledger_state, slurm_state, gate_passed_at, now, jobs, image_version, pool_image=None):
        from gpufleet.capacity.tiers import classify
        tier, _why = classify(ledger_state, slurm_state, gate_passed_at=gate_passed_at,
                              gate_validity=self.policy.pools[pool].gate_validity, now=now, jobs=jobs,
                              image_version=image_version, pool_image=pool_image)
        return tier

    def map_jobs(self, jobs, nodes):
        """(jobs with ``pool`` set, [(job, why)] no pool can ever serve)."""
        from gpufleet.capacity.demand import map_jobs
        mapped = map_jobs(model.Demand(jobs=tuple(jobs)), self.policy, model.Supply(nodes=tuple(nodes)))
        return mapped.jobs, mapped.unservable

    def gate_fresh(self, pool, gate_passed_at, now):
        """True when the last passed gate is within the pool's gate validity (no re-gate needed)."""
        from gpufleet.capacity.tiers import gate_valid
        return gate_valid(gate_passed_at, self.policy.pools[pool].gate_validity, now)

    def pools(self):
        """{pool name: its policy} (the day-2 stage reads floors, gate validity and ``day2``)."""
        return dict(self.policy.pools)

    def gang_deadline(self, pool):
        return self.policy.pools[pool].gang_deadline

    def concurrency(self):
        return self.policy.fleet.concurrency_limit

    def fold_gangs(self, actions):
        """Gangs in progress after ``actions`` (oldest first): the planner's bookkeeping rule."""
        from gpufleet.capacity.gangbook import fold
        return fold((), actions)

    def plan(self, jobs, nodes, in_flight, gangs, now, history, forecasters=None):
        """``history``: {pool: DemandSamples} (samples()); ``forecasters``: {pool: fitted learned
        model or learned.Unfitted}, fitted outside the pass (gpufleet.controller.learning)."""
        from gpufleet.capacity.planner import plan
        supply = model.Supply(nodes=tuple(nodes), in_flight=tuple(in_flight), gangs=tuple(gangs))
        return plan(model.Demand(jobs=tuple(jobs)), supply, self.policy, now, history=history,
                    forecasters=forecasters)
