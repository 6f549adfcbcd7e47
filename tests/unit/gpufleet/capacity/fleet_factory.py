"""Small builders for capacity tests: a policy from keyword overrides, nodes, jobs, gangs."""
from gpufleet.capacity.model import (BUSY, COLD, HOT, IDLE, PROVISIONING, UNAVAILABLE, WARM,
                                     Action, Demand, Gang, GangMember, Job, NodeView, Supply)
from gpufleet.capacity.planner import plan
from gpufleet.capacity.policy import Policy

NOW = 1_800_000_000.0   # 2027-01-15 08:00 UTC, a Friday
STATES = {BUSY: "joined", IDLE: "joined", HOT: "hot", WARM: "parked", COLD: "enrolled",
          PROVISIONING: "imaging", UNAVAILABLE: "failed"}


def make_policy(pools=None, limit=100, **pool):
    """One pool ``p`` (or ``pools``: {name: overrides}) with permissive defaults."""
    pools = pools or {"p": pool}
    body = {}
    for name, overrides in pools.items():
        spec = {"sku": "sku-" + name, "members": {"patterns": [name + "-*"]},
                "match": {"partitions": [name]}, "max_concurrent_bringups": 50,
                # one node validates alone here; test_fabric_companions.py sets 2
                "fabric_test_nodes": 1}
        spec.update(overrides)
        body[name] = spec
    return Policy.model_validate({"fleet": {"concurrency_limit": limit}, "pools": body})


def node(name, tier, pool="p", **fields):
    fields.setdefault("state", STATES[tier])
    fields.setdefault("since", NOW - 60)
    if tier == IDLE:
        fields.setdefault("idle_since", NOW - 60)
    if tier == BUSY:
        fields.setdefault("jobs", ("running-1",))
    return NodeView(node=name, pool=pool, tier=tier, **fields)


def nodes(tier, count, pool="p", start=0, **fields):
    return tuple(node(f"{pool}-{tier}-{i:02d}", tier, pool, **fields)
                 for i in range(start, start + count))


def job(job_id, size=1, pool="p", **fields):
    fields.setdefault("reason", "Resources")
    fields.setdefault("submit_time", NOW - 120)
    fields.setdefault("partition", pool)
    return Job(job_id=str(job_id), nodes=size, **fields)


def gang(gang_id, job_id, members, pool="p", deadline_at=NOW + 600, member_deadline=None):
    member_deadline = deadline_at if member_deadline is None else member_deadline
    return Gang(gang_id=gang_id, job_id=str(job_id), pool=pool, size=len(members),
                deadline_at=deadline_at,
                members=tuple(GangMember(m, member_deadline) for m in members))


def run(policy, node_list=(), jobs=(), in_flight=(), gangs=(), now=NOW, history=None):
    return plan(Demand(tuple(jobs)), Supply(tuple(node_list), tuple(in_flight), tuple(gangs)),
                policy, now, history)


def kinds(result):
    return [a.kind for a in result.actions]


def by_kind(result, kind):
    return [a for a in result.actions if a.kind == kind]


def flight(kind, name, pool="p", **fields):
    return Action(kind=kind, pool=pool, nodes=(name,), reason="in flight", **fields)
