"""The one place the fleet view reads the world: ledger, policy, inventory, Slurm, gate reports.

Everything here is an adapter: it turns the records into ``inputs.FleetInputs`` and the
pure functions never see a file, a database or a clock.

Pools come from the planner's policy (gpufleet.capacity.policy): a pool's members are the
inventory hosts its member rules claim (gpufleet.controller.planning, first pool wins);
without an inventory, the ledger's nodes whose name or SKU the rules claim. Gangs in progress
come from the decision log (the controller's record of them) and from the ledger's gang
tables (the gang playbooks); a ledger gang belongs to the job named before the ``@`` of its
id (gpufleet.capacity.gang.gang_id_for).
"""
import os
import shutil

from gpufleet.controller.supply import epoch
from gpufleet.view.gate_files import gate_reports
from gpufleet.view.inputs import FleetInputs, PoolSpec, Sample, Transition
from gpufleet.view.slurm_input import read_sinfo, read_squeue
from gpufleet.work import folds

__all__ = ["SourceError", "load", "pools_from_policy", "run_slurm", "ledger_transitions",
           "ledger_samples", "ledger_gangs", "decision_gangs", "open_ledger"]


class SourceError(Exception):
    pass


def open_ledger(location, password=None):
    """The ledger read-only (check mode: nothing is ever written). A PostgreSQL URL without
    its password takes it from $GPUFLEET_LEDGER_PASSWORD, as ``gpufleet report`` does."""
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
    return Ledger(location, dry_run=True, password=password or os.environ.get("GPUFLEET_LEDGER_PASSWORD") or None)


def _ledger_hosts(ledger_nodes):
    """Inventory-like hosts from ledger records when no inventory is given: name and SKU."""
    from gpufleet.controller.inventory import Host
    return dict((r["node"], Host(name=r["node"], groups=(), sku=r.get("sku") or "")) for r in ledger_nodes)


def pools_from_policy(policy, ledger_nodes, hosts=None):
    """PoolSpecs from the planner's Policy; ``hosts``: inventory name -> Host (optional)."""
    from gpufleet.controller.planning import Planning
    planning = Planning(policy=policy)
    claimed = {}
    for name, host in sorted((hosts or _ledger_hosts(ledger_nodes)).items()):
        pool = planning.pool_of(host)
        if pool is None and hosts is None:
            pool = next((p for p, spec in policy.pools.items() if spec.sku == host.sku), None)
        if pool is not None:
            claimed.setdefault(pool, []).append(name)
    return tuple(PoolSpec(name, spec.sku, spec.gpus_per_node, tuple(claimed.get(name, ())),
                          ",".join(spec.match.partitions), spec.max_concurrent_bringups, spec.gate_validity)
                 for name, spec in policy.pools.items())
def run_slurm(argv, prefix=(), timeout=30):
    """Text printed by ``squeue --json`` or ``sinfo --json``, run behind ``prefix`` (e.g. ``ssh
    ctl``) when given (the controller's runner: fails closed naming the command); a host
    without the command is told to pass the saved output."""
    from gpufleet.controller.demand import run_command
    prefix, tool = list(prefix), argv[0]
    if shutil.which((prefix or argv)[0]) is None:
        if prefix:
            raise SourceError("%s (the start of --slurm-prefix) is not installed on this host; fix the prefix "
                              "or pass --%s-json FILE with saved output." % (prefix[0], tool))
        raise SourceError("%s is not installed on this host. Run gpufleet on the Slurm controller "
                          "host, pass --slurm-prefix (e.g. 'ssh slurmctl'), or --%s-json FILE with its "
                          "saved output." % (tool, tool))
    return run_command(prefix + list(argv), timeout)


def ledger_transitions(ledger):
    return tuple(Transition(h["node"], epoch(h["at"]), h["to_state"], h["from_state"], h["why"] or "",
                            h["gate_report_id"], h["gang_id"]) for h in ledger.history())

def ledger_samples(ledger, since=None):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import decisions
    return tuple(Sample(s["node"], float(s["at"]), s["slurm_state"], s["reason"] or "")
                 for s in decisions.node_samples(ledger, since=since))

def decision_gangs(decision_rows):
    """Gangs the controller is forming: the planner's fold over the recorded decisions, read
    the way the controller's loop reads them (gpufleet.controller.loop)."""
    from gpufleet.capacity.gangbook import fold
    acts = folds.gang_actions(decision_rows)   # the loop's own decision -> Action reader
    return tuple({"gang_id": g.gang_id, "job": g.job_id, "size": g.size, "status": "forming",
                  "members": [{"node": m.node, "status": "member"} for m in g.members]}
                 for g in fold((), acts))


def ledger_gangs(ledger):
    """Gangs still forming (not admitted or rolled back) with their active members."""
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import ledger_gangs as sql
    with ledger.transaction(write=False) as cur:
        gangs = [sql.load(cur, gang_id) for gang_id in sql.gang_ids(cur)]
    return tuple(dict(g, job=g["gang_id"].split("@", 1)[0],
                      members=[dict(m, status="member") for m in g["members"]])
                 for g in gangs if g["status"] not in ("admitted", "rolled_back", "released"))

def load(ledger, policy, now, squeue_text=None, sinfo_text=None, gate_dir=None, samples_since=None,
         hosts=None):
    """FleetInputs from an open ledger, the planner's Policy, Slurm's JSON text (None: no jobs
    or no Slurm nodes known) and optionally the inventory hosts."""
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import decisions
    pools = pools_from_policy(policy, ledger.nodes(), hosts)
    jobs, extras = read_squeue(squeue_text, policy, pools) if squeue_text else ((), {})
    recent = tuple(decisions.decisions(ledger, since=now - folds.GANG_LOOKBACK_S))
    return FleetInputs(now=now, pools=pools, transitions=ledger_transitions(ledger),
                       samples=ledger_samples(ledger, samples_since), jobs=jobs, job_extra=extras,
                       slurm_nodes=read_sinfo(sinfo_text) if sinfo_text else {},
                       gate_reports=gate_reports(gate_dir) if gate_dir else {},
                       gangs=ledger_gangs(ledger) + decision_gangs(recent), decisions=recent,
                       fleet_concurrency=policy.fleet.concurrency_limit)
