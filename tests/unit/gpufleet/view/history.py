"""A hand-made fleet history shared by the fleet-view tests (times relative to T0).

Period [T0, T0 + 4 h), pool h100 (8 GPUs per node) owns n1..n4:
- n1: enrolled before the period, brought up, joined at +2 h; Slurm idle, busy 1 h, idle;
- n2: joined and busy (sampled before the period), drained at +1 h, parked at +1.5 h,
  waking at +3 h, hot at +3.25 h;
- n3: enrolled at T0, fails imaging at +0.75 h, break_fix at +1 h, decommissioned at +3 h;
- n4: owned, never enrolled.
"""
from gpufleet.view.inputs import FleetInputs, PoolSpec, Sample, SlurmNode, Transition

T0 = 1_800_000_000.0
H = 3600.0
POOL = PoolSpec("h100", "h100-sxm-8x", 8, ("n1", "n2", "n3", "n4"), partition="gpu",
                max_concurrent_bringups=2)

_STEPS = {
    "n1": [(-1 * H, "enrolled"), (0, "inspected"), (0.5 * H, "imaging"), (1 * H, "configuring"),
           (1.5 * H, "validating"), (1.75 * H, "ready"), (2 * H, "joined")],
    "n2": [(-2 * H, "enrolled"), (-1.9 * H, "inspected"), (-1.8 * H, "imaging"), (-1.5 * H, "configuring"),
           (-1.25 * H, "validating"), (-1.1 * H, "ready"), (-1 * H, "joined"), (1 * H, "draining"),
           (1.5 * H, "parked"), (3 * H, "waking"), (3.25 * H, "hot")],
    "n3": [(0, "enrolled"), (0.25 * H, "inspected"), (0.5 * H, "imaging"), (0.75 * H, "failed"),
           (1 * H, "break_fix"), (3 * H, "decommissioned")],
}


def transitions(steps=None):
    out = []
    for node, items in sorted((steps or _STEPS).items()):
        previous = None
        for offset, state in items:
            out.append(Transition(node, T0 + offset, state, previous, why="to " + state))
            previous = state
    return tuple(sorted(out, key=lambda t: t.at))


SAMPLES = (
    Sample("n2", T0 - 0.8 * H, "mixed"),
    Sample("n1", T0 + 2 * H, "idle"),
    Sample("n1", T0 + 2.5 * H, "allocated"),
    Sample("n1", T0 + 3.5 * H, "idle"),
)


def inputs(now=T0 + 4 * H, **over):
    values = dict(now=now, pools=(POOL,), transitions=transitions(), samples=SAMPLES,
                  slurm_nodes={"n1": SlurmNode("n1", frozenset({"IDLE"}), partitions=("gpu",)),
                               "n2": SlurmNode("n2", frozenset({"IDLE", "DRAIN"}), "held by gpufleet")})
    values.update(over)
    return FleetInputs(**values)
