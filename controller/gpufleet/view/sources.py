"""The one place the fleet view reads the world: ledger, policy, Slurm, gate reports.

Everything here is an adapter: it turns the records into ``inputs.FleetInputs`` and the
pure functions never see a file, a database or a clock.

Wiring notes (docs/fleet-view.md): pools come from the policy's ``pools`` mapping (``sku``,
``gpus_per_node``, ``partition``, ``members``, ``max_concurrent_bringups``) and the fleet
limit from ``fleet.max_concurrent_bringups``; a pool without ``members`` owns the ledger's
nodes of its SKU. When the planner's policy loader (gpufleet.capacity.policy) lands,
``pools_from_policy`` should take its parsed pools instead of reading the YAML here.
A gang belongs to the job whose id is its gang id, optionally prefixed ``job-`` or ``gang-``.
"""
import shutil
import subprocess

from gpufleet.report.model import gate_reports, parse_time
from gpufleet.view.inputs import FleetInputs, PoolSpec, Sample, Transition
from gpufleet.view.slurm_json import parse_sinfo, parse_squeue

__all__ = ["SourceError", "load", "pools_from_policy", "run_slurm", "ledger_transitions",
           "ledger_samples", "ledger_gangs", "open_ledger"]

class SourceError(Exception):
    pass

def open_ledger(location, password=None):
    """The ledger read-only (check mode: nothing is ever written)."""
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
    return Ledger(location, dry_run=True, password=password)

def _field(pool, spec, key, kind, default=None):
    value = spec.get(key, default)
    if value is None or not isinstance(value, kind):
        raise SourceError("Policy pool %s: field %s is %r; set it to a %s." % (
            pool, key, value, kind.__name__ if isinstance(kind, type) else "list"))
    return value

def pools_from_policy(policy, ledger_nodes):
    """PoolSpecs from the policy dict; ``ledger_nodes`` are the ledger's node records."""
    pools = (policy or {}).get("pools")
    if not isinstance(pools, dict) or not pools:
        raise SourceError("The policy has no pools mapping. Add pools: {NAME: {sku, gpus_per_node, "
                          "partition, members}} (docs/fleet-view.md).")
    out = []
    for name, spec in sorted(pools.items()):
        spec = spec or {}
        sku = _field(name, spec, "sku", str)
        members = spec.get("members")
        if members is None:
            members = [r["node"] for r in ledger_nodes if r.get("sku") == sku]
        out.append(PoolSpec(name, sku, _field(name, spec, "gpus_per_node", int),
                            tuple(sorted(_field(name, {"members": members}, "members", list))),
                            spec.get("partition") or "", int(spec.get("max_concurrent_bringups") or 0)))
    return tuple(out)

def run_slurm(argv, timeout=30):
    """Text printed by ``squeue --json`` or ``sinfo --json``; fails closed with the reason."""
    if shutil.which(argv[0]) is None:
        raise SourceError("%s is not installed on this host. Run gpufleet on the Slurm controller "
                          "host or pass --%s-json FILE with its saved output." % (argv[0], argv[0]))
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise SourceError("%s did not answer within %d s; is slurmctld up?" % (" ".join(argv), timeout))
    if done.returncode != 0:
        raise SourceError("%s failed (exit %d): %s" % (" ".join(argv), done.returncode, done.stderr.strip()[:300]))
    return done.stdout

def ledger_transitions(ledger):
    return tuple(Transition(h["node"], parse_time(h["at"]), h["to_state"], h["from_state"], h["why"] or "",
                            h["gate_report_id"], h["gang_id"]) for h in ledger.history())

def ledger_samples(ledger, since=None):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import decisions
    return tuple(Sample(s["node"], float(s["at"]), s["slurm_state"], s["reason"] or "")
                 for s in decisions.node_samples(ledger, since=since))

def _job_of_gang(gang_id):
    for prefix in ("job-", "gang-"):
        if gang_id.startswith(prefix):
            return gang_id[len(prefix):]
    return gang_id

def ledger_gangs(ledger):
    """Gangs still forming (not admitted or rolled back) with their active members."""
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import ledger_gangs as sql
    with ledger.transaction(write=False) as cur:
        ids = [r[0] for r in cur.execute("SELECT gang_id FROM gangs ORDER BY gang_id").fetchall()]
        gangs = [sql.load(cur, gang_id) for gang_id in ids]
    return tuple(dict(g, job=_job_of_gang(g["gang_id"]),
                      members=[dict(m, status="member") for m in g["members"]])
                 for g in gangs if g["status"] not in ("admitted", "rolled_back", "released"))

def load(ledger, policy, now, squeue_text=None, sinfo_text=None, gate_dir=None, samples_since=None):
    """FleetInputs from an open ledger, the policy dict and Slurm's JSON text (None: no jobs
    or no Slurm nodes known)."""
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import decisions
    pools = pools_from_policy(policy, ledger.nodes())
    pool_of_partition = dict((p.partition, p.name) for p in pools if p.partition)
    jobs, extras = parse_squeue(squeue_text, pool_of_partition) if squeue_text else ((), {})
    fleet = ((policy or {}).get("fleet") or {}).get("max_concurrent_bringups") or 0
    return FleetInputs(now=now, pools=pools, transitions=ledger_transitions(ledger),
                       samples=ledger_samples(ledger, samples_since), jobs=jobs, job_extra=extras,
                       slurm_nodes=parse_sinfo(sinfo_text) if sinfo_text else {},
                       gate_reports=gate_reports(gate_dir) if gate_dir else {},
                       gangs=ledger_gangs(ledger), decisions=tuple(decisions.decisions(ledger, limit=200)),
                       fleet_concurrency=int(fleet))
