"""Fakes for the controller's outside world: a demand source, the planner, playbook runs."""
import threading

import pytest

from gpufleet.capacity.model import Action, Job, Plan
from gpufleet.controller import records
from gpufleet.controller.actuator import Actuator
from gpufleet.controller.inventory import Host
from gpufleet.controller.loop import Reconciler


class FakeSource:
    name = "fake"

    def __init__(self, jobs=(), nodes=None, error=None):
        self._jobs, self._nodes, self.error = tuple(jobs), nodes or {}, error

    def jobs(self):
        if self.error:
            raise self.error
        return self._jobs

    def nodes(self):
        return self._nodes


class FakePlanning:
    """Pool 'lab' owns every host; the plan is whatever the test sets (minus in-flight nodes)."""

    def __init__(self, actions=()):
        self.actions = list(actions)
        self.seen = []
        self.pool = None     # the 'lab' pool's policy (default: the policy's defaults)

    def pool_of(self, host):
        return "lab"

    def classify(self, pool, state, slurm_state, gate_at, now, jobs, image, pool_image=None):
        return {"hot": "hot", "parked": "warm", "joined": "busy" if jobs else "idle"}.get(state, "cold")

    def map_jobs(self, jobs, nodes):
        mapped = tuple(Job(**dict(j.__dict__, pool="lab")) for j in jobs if j.partition != "nowhere")
        return mapped, tuple((j, "no pool matches") for j in jobs if j.partition == "nowhere")

    def pools(self):
        from gpufleet.capacity.policy import Members, Pool
        return {"lab": self.pool or Pool(sku="lab", members=Members(groups=("sku_lab",)))}

    def gang_deadline(self, pool):
        return self.pools()[pool].gang_deadline

    def gate_fresh(self, pool, gate_at, now):
        return gate_at is not None and now - gate_at < 3600

    def fold_gangs(self, actions):
        from gpufleet.capacity.gangbook import fold
        return fold((), actions)

    @property
    def policy(self):
        from types import SimpleNamespace
        return SimpleNamespace(pools=self.pools())

    def plan(self, jobs, nodes, in_flight, gangs, now, history, forecasters=None):
        self.seen.append((jobs, nodes, in_flight, gangs))
        self.forecasters = forecasters
        busy = {n for a in in_flight for n in a.nodes}
        return Plan(actions=tuple(a for a in self.actions if not busy.intersection(a.nodes)))


# What a successful playbook leaves in the ledger (legal paths through the state machine).
PATHS = {
    "bringup": ("enrolled", "inspected", "imaging", "configuring", "validating", "ready", "hot"),
    "admit": ("joined",), "park": ("parked",), "wake": ("waking", "hot"), "hold": ("draining", "hot"),
    "drain": ("draining",), "recycle": ("recycling", "imaging", "configuring", "validating", "ready", "hot"),
    "revalidate": ("hot", "waking", "validating", "ready", "hot"),
}


class Runs:
    """Records playbook runs and, when ``ledger_path`` is set and rc is 0, moves the targets
    along the path a real run records; ``gate`` blocks runs until released."""

    def __init__(self, rc=0, ledger_path=None):
        self.calls, self.rc, self.gate = [], rc, threading.Event()
        self.gate.set()
        self.checks = []
        self.ledger_path = ledger_path

    def __call__(self, playbook, extravars, run_id):
        for check in self.checks:
            check(playbook, extravars, run_id)
        self.calls.append((playbook, extravars, run_id))
        self.gate.wait(10)
        if self.rc == 0 and self.ledger_path:
            self._effects(playbook if isinstance(playbook, str) else playbook[-1], extravars)
        return ("successful" if self.rc == 0 else "failed"), self.rc

    def _effects(self, playbook, extravars):
        led = records.open_ledger(self.ledger_path)   # the run's own thread: its own connection
        try:
            for node in extravars["gpufleet_targets"].split(","):
                path = PATHS.get(playbook, ())
                if playbook == "bringup" and extravars.get("gpufleet_bringup_hold") is False:
                    path = path + ("joined",)
                current = (led.get(node) or {}).get("state")
                for target in path[path.index(current) + 1:] if current in path else path:
                    led.transition(node, target, "fake-run", playbook)
        finally:
            led.close()


@pytest.fixture
def ledger(tmp_path):
    led = records.open_ledger(str(tmp_path / "ledger.sqlite"), clock=lambda: 1000.0)
    yield led
    led.close()


HOSTS = {n: Host(name=n, groups=("sku_lab",), sku="lab") for n in ("n1", "n2", "n3", "n4")}


@pytest.fixture
def make_reconciler(ledger):
    def make(actions=(), jobs=(), runs=None, source=None, controller_id="ctl-a"):
        runs = runs or Runs()
        runs.ledger_path = runs.ledger_path or ledger.path
        planning = FakePlanning(actions)
        actuator = Actuator("inventory.yml", concurrency=2, run=runs)
        rec = Reconciler(source or FakeSource(jobs), ledger, planning, actuator, HOSTS, controller_id,
                         clock=lambda: 1000.0)
        return rec, runs, planning
    return make


def bringup(*nodes, reason="hot floor 2, have 0"):
    return Action(kind="bringup", pool="lab", nodes=tuple(nodes), reason=reason)
