"""Which warmth tier a node is in, from its ledger state, its Slurm state and its gate age.

Pure: the controller passes what it read and the clock. docs/capacity.md has the table.
Unknown states are ``unavailable`` (fail closed): a node we cannot place is never admitted.
"""
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from gpufleet.capacity.model import BUSY, COLD, HOT, IDLE, PROVISIONING, UNAVAILABLE, WARM

__all__ = ["classify", "gate_valid", "slurm_flags", "LEDGER_TIERS"]

# Ledger state -> tier before Slurm and the gate are looked at. "joined", "hot", "ready" and
# "parked" are refined below.
LEDGER_TIERS = {
    states.ENROLLED: COLD, states.INSPECTED: COLD, states.RECYCLING: COLD,
    states.IMAGING: PROVISIONING, states.CONFIGURING: PROVISIONING, states.VALIDATING: PROVISIONING,
    states.WAKING: PROVISIONING,
    states.READY: HOT, states.HOT: HOT, states.PARKED: WARM, states.JOINED: IDLE,
    states.FAILED: UNAVAILABLE, states.BREAK_FIX: UNAVAILABLE, states.DRAINING: UNAVAILABLE,
    states.DECOMMISSIONED: UNAVAILABLE,
}
_RUNNING = {"allocated", "alloc", "mixed", "completing"}
# Slurm states or flags under which a joined node cannot take work.
_BROKEN = {"down", "drain", "drained", "draining", "fail", "failing", "not_responding",
           "maint", "unknown", "powered_down", "power_down", "powering_down", "powering_up",
           "reboot_requested", "reboot_issued", "invalid", "invalid_reg", "future"}
# A hot node is drained on purpose; these mean it is broken.
_HOT_BROKEN = _BROKEN - {"drain", "drained", "draining"}


def gate_valid(gate_passed_at, validity, now):
    """True when the last passed gate is younger than ``validity`` seconds at ``now``."""
    return gate_passed_at is not None and 0 <= now - gate_passed_at <= validity


def slurm_flags(state):
    """Slurm's node state as a set of lower-case words.

    sinfo/scontrol print 'IDLE+DRAIN' or 'idle*'; ``sinfo --json`` gives a list
    (['IDLE', 'DRAIN']) from 23.02 on and a string in 22.05.
    """
    if state is None:
        return frozenset()
    words = [state] if isinstance(state, str) else list(state)
    flags = set()
    for word in words:
        for part in str(word).lower().replace("*", "+not_responding").split("+"):
            if part:
                flags.add(part)
    return frozenset(flags)


def classify(ledger_state, slurm_state=None, *, gate_passed_at=None, gate_validity=0.0,
             now=0.0, jobs=(), image_version=None, pool_image=None):
    """-> (tier, why). ``pool_image``: the pool's current image; another one means cold."""
    tier = LEDGER_TIERS.get(ledger_state)
    if tier is None:
        return UNAVAILABLE, f"ledger state {ledger_state!r} is unknown"
    flags = slurm_flags(slurm_state)
    if ledger_state == states.JOINED:
        return _joined(flags, jobs)
    if tier == HOT and flags & _HOT_BROKEN:
        return UNAVAILABLE, f"{ledger_state} but Slurm says {'+'.join(sorted(flags))}"
    if tier in (HOT, WARM) and pool_image and image_version != pool_image:
        return COLD, f"image {image_version} is not the pool's {pool_image}: needs a bring-up"
    if tier == HOT and not gate_valid(gate_passed_at, gate_validity, now):
        return WARM, f"{ledger_state} but its gate is stale: needs a re-gate before admission"
    return tier, f"ledger state {ledger_state}"


def _joined(flags, jobs):
    if jobs or flags & _RUNNING:
        return BUSY, "joined and running jobs"
    if not flags:
        return UNAVAILABLE, "joined but Slurm does not report it"
    if flags & _BROKEN:
        return UNAVAILABLE, f"joined but Slurm says {'+'.join(sorted(flags))}"
    if "idle" in flags:
        return IDLE, "joined and idle"
    return UNAVAILABLE, f"joined, Slurm state {'+'.join(sorted(flags))} is not understood"
