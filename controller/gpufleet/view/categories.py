"""Where each owned node stands, in the seam's categories and the four layers.

A node's category comes from its ledger state and, while it is joined, from Slurm's
state. Busy and idle are schedulable; every other category is paid but not schedulable.
Layers: L4 workload (busy), L3 scheduling (joined, but idle or refused by Slurm),
L2 provisioning (on its way or parked by the controller), L1 capacity supply (broken or
not enrolled). docs/fleet-view.md has the table.
"""
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from gpufleet.capacity.tiers import slurm_flags
from gpufleet.view.layers import LAYERS, LAYER_NAMES

__all__ = ["CATEGORIES", "LAYER_OF", "SCHEDULABLE", "LAYERS", "LAYER_NAMES",
           "ledger_category", "slurm_category", "IN_FLIGHT_STATES"]


# (category, layer), in the order the seam shows them.
_TABLE = (
    ("busy", "L4"),
    ("idle", "L3"),          # joined and schedulable, running nothing
    ("slurm_down", "L3"),    # joined in the ledger, but Slurm says DOWN/FAIL/NOT_RESPONDING
    ("unsampled", "L3"),     # joined, no Slurm sample yet: not proven schedulable
    ("hot", "L2"),           # validated, powered, held (hot; ready: waiting for admission)
    ("warm", "L2"),          # parked: validated, powered off
    ("cold", "L2"),          # enrolled or inspected: needs the full bring-up
    ("provisioning", "L2"),  # imaging, configuring, validating, waking, recycling
    ("draining", "L2"),
    ("failed", "L1"),
    ("break_fix", "L1"),
    ("not_enrolled", "L1"),  # owned by the pool, not (yet) in the ledger
)
CATEGORIES = tuple(c for c, _l in _TABLE)
LAYER_OF = dict(_TABLE)
SCHEDULABLE = ("busy", "idle")

_LEDGER = {
    states.HOT: "hot", states.READY: "hot", states.PARKED: "warm",
    states.ENROLLED: "cold", states.INSPECTED: "cold",
    states.IMAGING: "provisioning", states.CONFIGURING: "provisioning", states.VALIDATING: "provisioning",
    states.WAKING: "provisioning", states.RECYCLING: "provisioning",
    states.DRAINING: "draining", states.FAILED: "failed", states.BREAK_FIX: "break_fix",
}
# Bring-ups under way: what a concurrency limit counts.
IN_FLIGHT_STATES = (states.IMAGING, states.CONFIGURING, states.VALIDATING, states.WAKING, states.RECYCLING)
# Slurm words (lower case, as gpufleet.capacity.tiers.slurm_flags reads them). Idle with a
# harmless flag (CLOUD: the lab's nodes) is idle; anything not busy, drained or idle counts
# as refused by Slurm (fail closed).
_BUSY = {"allocated", "alloc", "mixed", "mix", "completing"}
_DRAIN = {"drain", "draining", "drained"}
_DOWN = {"down", "fail", "failing", "not_responding", "powered_down", "power_down", "powering_down",
         "powering_up", "future", "unknown", "maint", "maintenance", "reserved", "invalid", "invalid_reg",
         "reboot_requested", "reboot_issued"}


def ledger_category(state):
    """Category of a node that is not joined; None for joined (ask Slurm) and decommissioned
    (no longer owned). Unknown states raise: a new ledger state must be placed here."""
    if state in (states.JOINED, states.DECOMMISSIONED):
        return None
    if state is None:
        return "not_enrolled"
    try:
        return _LEDGER[state]
    except KeyError:
        raise ValueError('Ledger state "%s" has no fleet-view category; add it to '
                         'gpufleet/view/categories.py.' % state)


def slurm_category(state):
    """Category of a joined node from Slurm's state: text (``"IDLE+DRAIN"``) or words
    (``["IDLE", "DRAIN"]``); None or empty: unsampled."""
    words = slurm_flags(state or None)
    if not words:
        return "unsampled"
    # A job still running on a draining node is work done: busy wins over the flags.
    if words & _BUSY:
        return "busy"
    if words & _DRAIN:
        return "draining"
    if "idle" in words and not words & _DOWN:
        return "idle"
    return "slurm_down"
