"""Rollouts and renewal wired into the reconcile pass: canaries, batches, halt, rollback,
one budget with repairs, restarts (fake playbook runs that move the ledger as real ones do)."""
import contextlib
import re

import pytest

from gpufleet.capacity.policy import Day2, Members, Pool, Refresh
from gpufleet.controller import records
from gpufleet.controller.images import Catalogue
from gpufleet.controller.slurm_json import SlurmNode
from tests.unit.gpufleet.controller.conftest import PATHS, FakeSource, Runs

CATALOGUE = Catalogue({"gpufleet_image_manifest_template": "/srv/img/{version}/manifest.json",
                       "gpufleet_image_url_template": "https://media/{version}.tgz"})
TO_JOINED = ("enrolled", "inspected", "imaging", "configuring", "validating", "ready", "joined")


class ImageRuns(Runs):
    """Runs whose recycle records the image it installed; ``fail`` nodes fail their gate."""

    def __init__(self, fail=()):
        super().__init__()
        self.fail = set(fail)

    def __call__(self, playbook, extravars, run_id):
        node = extravars["gpufleet_targets"]
        if playbook == "recycle" and node in self.fail:
            self.calls.append((playbook, extravars, run_id))
            led = records.open_ledger(self.ledger_path, clock=lambda: 1000.0)   # the tests' clock: gates stay valid
            try:
                for target in ("recycling", "imaging", "failed"):
                    led.transition(node, target, "fake-run", "recycle",
                                   image_version=extravars.get("gpufleet_image_version"))
            finally:
                led.close()
            return "failed", 2
        return super().__call__(playbook, extravars, run_id)

    def _effects(self, playbook, extravars):
        if playbook != "recycle":
            return super()._effects(playbook, extravars)
        led = records.open_ledger(self.ledger_path, clock=lambda: 1000.0)   # the tests' clock: gates stay valid
        try:
            node = extravars["gpufleet_targets"]
            path = PATHS["recycle"]
            current = (led.get(node) or {}).get("state")
            for target in path[path.index(current) + 1:] if current in path else path:
                led.transition(node, target, "fake-run", "recycle",
                               image_version=extravars.get("gpufleet_image_version"))
        finally:
            led.close()


def fleet(ledger, nodes=("n1", "n2", "n3", "n4"), version="v1"):
    for node in nodes:
        for target in TO_JOINED:
            ledger.transition(node, target, "test", "setup", image_version=version)


def idle(nodes=("n1", "n2", "n3", "n4")):
    return FakeSource(nodes={n: SlurmNode(n, "IDLE", ()) for n in nodes})


def make(make_reconciler, fail=(), budget=2, canaries=1, threshold=0, source=None):
    rec, runs, planning = make_reconciler(source=source or idle(), runs=ImageRuns(fail))
    planning.pool = Pool(sku="lab", members=Members(groups=("sku_lab",)), day2=Day2(
        budget=budget, refresh=Refresh(canaries=canaries, max_canary_failures=threshold)))
    rec.catalogue = CATALOGUE
    return rec, runs


def passes(rec, count):
    for _ in range(count):
        rec.once()
        rec.drain()


def versions(ledger, nodes=("n1", "n2", "n3", "n4")):
    return {n: ledger.get(n)["image_version"] for n in nodes}


def test_canary_first_then_batches_within_the_budget_until_done(ledger, make_reconciler):
    fleet(ledger)
    rec, runs = make(make_reconciler)
    rid = records.start_rollout(ledger, "lab", "v1", "v2", "test", "new driver")
    passes(rec, 1)
    assert records.rollouts(ledger)[0]["canaries"] == ["n1"]
    assert [(c[0], c[1]["gpufleet_targets"]) for c in runs.calls] == [("drain", "n1")]
    passes(rec, 12)
    assert versions(ledger) == dict.fromkeys(("n1", "n2", "n3", "n4"), "v2")
    assert {ledger.get(n)["state"] for n in versions(ledger)} == {"joined"}
    row = records.rollouts(ledger)[0]
    assert (row["id"], row["phase"]) == (rid, "done")
    recycles = [c[1] for c in runs.calls if c[0] == "recycle"]
    assert [r["gpufleet_targets"] for r in recycles][0] == "n1"            # the canary first
    assert all(r["gpufleet_image_version"] == "v2" and r["gpufleet_image_url"] == "https://media/v2.tgz"
               and r["gpufleet_image_manifest"] == "/srv/img/v2/manifest.json" for r in recycles)
    # never more than the budget (2) of the pool out at once
    out, most = set(), 0
    for decision in records.decisions(ledger):
        if decision["action"] == "drain":
            out.update(decision["nodes"])
        if decision["action"] == "readmit" and decision["outcome"] == "ok":
            out.difference_update(decision["nodes"])
        most = max(most, len(out))
    assert most == 2
    reasons = [d["reason"] for d in records.decisions(ledger) if d["action"] == "drain"]
    assert "canary" in reasons[0] and all("batch" in r for r in reasons[1:])


def test_a_failing_canary_halts_and_its_previous_version_is_redeployed(ledger, make_reconciler):
    fleet(ledger)
    rec, runs = make(make_reconciler, fail={"n1"})
    records.start_rollout(ledger, "lab", "v1", "v2", "test", "new driver")
    passes(rec, 3)                     # drain, recycle (gate fails): halted
    row = records.rollouts(ledger)[0]
    assert row["phase"] == "rolling_back" and "halted: 1 canary gate failure" in row["reason"]
    runs.fail.clear()
    passes(rec, 4)
    assert records.rollouts(ledger)[0]["phase"] == "rolled_back"
    assert versions(ledger) == dict.fromkeys(("n1", "n2", "n3", "n4"), "v1")
    touched = {c[1]["gpufleet_targets"] for c in runs.calls}
    assert touched == {"n1"}                                  # no other node was drained
    last = [c[1] for c in runs.calls if c[0] == "recycle"][-1]
    assert last["gpufleet_image_version"] == "v1"
    rollback, = [d for d in records.decisions(ledger) if "rollback" in d["reason"] and d["action"] == "recycle"]
    assert rollback["demand"]["action"]["rollout"]["role"] == "rollback" and rollback["outcome"] == "ok"


def test_an_operator_rollback_after_batches_restores_every_moved_node(ledger, make_reconciler):
    fleet(ledger)
    rec, runs = make(make_reconciler, budget=1)
    rid = records.start_rollout(ledger, "lab", "v1", "v2", "test", "new driver")
    passes(rec, 7)                     # canary n1 moved, readmitted; batch n2 moved
    moved = {n for n, v in versions(ledger).items() if v == "v2"}
    assert "n1" in moved and len(moved) >= 2
    records.set_rollout_phase(ledger, rid, "rolling_back", "operator: rollback")
    passes(rec, 12)
    assert versions(ledger) == dict.fromkeys(("n1", "n2", "n3", "n4"), "v1")
    assert records.rollouts(ledger)[0]["phase"] == "rolled_back"


def test_a_halted_rollout_starts_nothing(ledger, make_reconciler):
    fleet(ledger)
    rec, runs = make(make_reconciler)
    rid = records.start_rollout(ledger, "lab", "v1", "v2", "test", "new driver")
    records.set_rollout_phase(ledger, rid, "halted", "operator: halt")
    passes(rec, 3)
    assert runs.calls == [] and records.decisions(ledger) == []


def test_a_restarted_controller_keeps_the_canaries_and_continues(ledger, make_reconciler):
    fleet(ledger)
    rec, runs = make(make_reconciler)
    records.start_rollout(ledger, "lab", "v1", "v2", "test", "new driver")
    runs.gate.clear()                  # the canary's drain hangs: the controller is killed
    rec.once()
    assert records.rollouts(ledger)[0]["canaries"] == ["n1"]
    runs.gate.set()
    rec.drain()
    again, runs2 = make(make_reconciler)
    again.converge()
    passes(again, 12)
    assert records.rollouts(ledger)[0]["phase"] == "done"
    assert records.rollouts(ledger)[0]["canaries"] == ["n1"]
    assert versions(ledger) == dict.fromkeys(("n1", "n2", "n3", "n4"), "v2")


class CountingLedger:
    """The test's ledger, counting the read-only transactions' queries of the rollouts table."""

    def __init__(self, ledger):
        self._ledger, self.rollout_reads = ledger, 0

    def __getattr__(self, name):
        return getattr(self._ledger, name)

    @contextlib.contextmanager
    def transaction(self, commit=None, write=True):
        with self._ledger.transaction(commit=commit, write=write) as cur:
            yield cur if write else _CountingCursor(cur, self)


class _CountingCursor:
    def __init__(self, cur, counter):
        self._cur, self._counter = cur, counter

    def __getattr__(self, name):
        return getattr(self._cur, name)

    def execute(self, query, *args):
        if re.search(r"\bFROM rollouts\b", query):
            self._counter.rollout_reads += 1
        return self._cur.execute(query, *args)


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_pass_reads_the_rollouts_once_for_the_pool_images_and_the_rollout_book(ledger, make_reconciler, dry_run):
    fleet(ledger)
    rec, runs = make(make_reconciler)
    earlier = records.start_rollout(ledger, "gpu", "v0", "v1", "test", "an earlier rollout")
    records.set_rollout_phase(ledger, earlier, "done", "test")
    records.start_rollout(ledger, "lab", "v1", "v2", "test", "new driver")
    rec.ledger = counting = CountingLedger(ledger)
    result = rec.once(dry_run=dry_run)
    rec.drain()
    assert counting.rollout_reads == 1
    assert rec.pool_images == {"gpu": "v1"}                          # the finished rollout's pool image
    drains = [(c[0], c[1]["gpufleet_targets"]) for c in runs.calls]
    assert drains == ([] if dry_run else [("drain", "n1")])          # the unfinished one's canary
    assert result.error is None


def _nhc_on_n4():
    nodes = dict((n, SlurmNode(n, "IDLE", ())) for n in ("n1", "n2", "n3", "n4"))
    nodes["n4"] = SlurmNode("n4", "IDLE", ("DRAIN",), reason="NHC: check_gpu failed")
    return FakeSource(nodes=nodes)


def test_rollout_work_and_repairs_share_one_budget(ledger, make_reconciler):
    fleet(ledger)
    rec, runs = make(make_reconciler, budget=1, source=_nhc_on_n4())
    records.start_rollout(ledger, "lab", "v1", "v2", "test", "new driver")
    passes(rec, 3)                     # the canary took the one slot; the NHC signal then persists
    drains = [d for d in records.decisions(ledger) if d["action"] == "drain"]
    assert [d["nodes"] for d in drains] == [["n1"]]           # no repair drain beside the canary


def test_an_open_repair_case_is_counted_before_the_rollout(ledger, make_reconciler):
    fleet(ledger)
    rec, runs = make(make_reconciler, budget=1, source=_nhc_on_n4())
    passes(rec, 3)                     # the NHC drain persists 3 passes: a repair case opens
    assert [d["nodes"] for d in records.decisions(ledger) if d["action"] == "drain"] == [["n4"]]
    records.start_rollout(ledger, "lab", "v1", "v2", "test", "new driver")
    passes(rec, 1)                     # the case holds the one slot: no canary yet
    assert records.rollouts(ledger)[0]["canaries"] == []
    assert [d["nodes"] for d in records.decisions(ledger) if d["action"] == "drain"] == [["n4"]]


def test_a_recycle_without_an_image_catalogue_is_recorded_not_started(ledger, make_reconciler):
    fleet(ledger)
    rec, runs = make(make_reconciler)
    rec.catalogue = None
    records.start_rollout(ledger, "lab", "v1", "v2", "test", "new driver")
    passes(rec, 4)
    recycle, = [d for d in records.decisions(ledger) if d["action"] == "recycle"]
    assert recycle["outcome"].startswith("not started: no image catalogue")
    assert [c[0] for c in runs.calls] == ["drain"]


@pytest.mark.parametrize("stale,expected", [(True, ["n1"]), (False, [])])
def test_renewal_recycles_an_idle_node_with_a_stale_gate_on_its_own_version(ledger, make_reconciler, stale,
                                                                            expected):
    fleet(ledger, nodes=("n1", "n2"))
    rec, runs = make(make_reconciler, budget=1, source=idle(("n1", "n2")))
    validity = "500s" if stale else "1d"
    rec.planning.pool = Pool(sku="lab", members=Members(groups=("sku_lab",)), gate_validity=validity,
                             day2=Day2(budget=1, renewal_reimage=True))
    rec.clock = lambda: 1600.0
    passes(rec, 1)
    drains = [d for d in records.decisions(ledger) if d["action"] == "drain"]
    assert [n for d in drains for n in d["nodes"]] == expected
    if stale:
        assert drains[0]["demand"]["action"]["rollout"] == {
            "rollout_id": None, "role": "renewal", "version": "v1", "gate_profile": None, "back_to": "joined"}
        assert "renewal (reimage_revalidate)" in drains[0]["reason"]
        passes(rec, 2)
        # the reimage path: a recycle next (here not started: the two-node pool has no free
        # known-good fabric peer for it), never a revalidate
        assert [d["action"] for d in records.decisions(ledger)][:2] == ["drain", "recycle"]


def test_renewal_without_a_reimage_re_gates_the_drained_node_and_readmits_it(ledger, make_reconciler):
    """day2.renewal_reimage false (the default): drain, then playbooks/revalidate.yml (the gate
    alone, the node keeps its image), then back to the tier it left; never a recycle."""
    fleet(ledger, nodes=("n1", "n2"))
    rec, runs = make(make_reconciler, budget=1, source=idle(("n1", "n2")))
    rec.planning.pool = Pool(sku="lab", members=Members(groups=("sku_lab",)), gate_validity="500s",
                             day2=Day2(budget=1))
    rec.clock = lambda: 1600.0
    passes(rec, 6)
    steps = [(d["action"], d["nodes"], d["outcome"]) for d in records.decisions(ledger)
             if (d.get("demand") or {}).get("action", {}).get("rollout")]
    assert steps[:3] == [("drain", ["n1"], "ok"), ("revalidate", ["n1"], "ok"), ("readmit", ["n1"], "ok")], steps
    assert "renewal (revalidate)" in [d for d in records.decisions(ledger) if d["action"] == "drain"][0]["reason"]
    assert [c[0] for c in runs.calls][:3] == ["drain", "revalidate", "admit"]
    assert "recycle" not in [c[0] for c in runs.calls]
    story = [t["to_state"] for t in ledger.history("n1")][len(TO_JOINED):]
    assert story[:7] == ["draining", "hot", "waking", "validating", "ready", "hot", "joined"], story
    assert ledger.get("n1")["image_version"] == "v1"
