"""Health signals from Slurm node states, the short idle health check and Redfish.

Slurm: DOWN, DRAIN and FAIL count only with a reason that is a health checker's (NHC's
``NHC:`` prefix, Slurm's own ResumeTimeout / Not responding, ...) or none at all for DOWN/FAIL
(a node that died says nothing). A drain whose reason is neither ours (``gpufleet:``) nor a
health checker's was set by a person and is left alone. Unknown health-check names and an
unreadable Redfish health are signals too: fail closed.
"""
from gpufleet.day2.model import Detection, OperatorDrain, Signal

__all__ = ["slurm_signals", "health_check_signals", "redfish_signals", "OURS",
           "HEALTH_CHECKER_REASONS"]

OURS = "gpufleet:"
# Prefixes (case-insensitive) of reasons written by a health checker or by slurmctld itself.
HEALTH_CHECKER_REASONS = ("nhc:", "nhc ", "resumetimeout", "not responding",
                          "node unexpectedly rebooted", "kill task failed",
                          "prolog error", "epilog error", "batch job complete failure",
                          "gres/gpu count", "low realmemory", "health check")
_OK_HEALTH = ("ok",)


def _flags(state):
    """'IDLE+DRAIN', 'down*', 'drained' -> {'IDLE', 'DRAIN', 'DOWN'} (Slurm's suffixes
    * ~ # ! % $ @ ^ - mark responding/power/reservation states, not health)."""
    flags = set()
    for part in str(state).upper().split("+"):
        part = part.rstrip("*~#!%$@^-")
        if part in ("DRAINED", "DRAINING"):
            part = "DRAIN"
        if part == "FAILING":
            part = "FAIL"
        if part == "NOT_RESPONDING":
            # The flag alone is no signal: it shows for seconds after a RESUME until the next
            # ping (a lab run drained a node on it), and slurmctld marks a node that stays
            # silent DOWN itself after SlurmdTimeout, which is a signal.
            continue
        flags.add(part)
    return flags


def _kind(flags):
    return next((kind for flag, kind in (("FAIL", "slurm_fail"), ("DOWN", "slurm_down"), ("DRAIN", "slurm_drain"))
                 if flag in flags), None)


def _is_checker(reason, extra):
    text = reason.strip().lower()
    return any(text.startswith(prefix) for prefix in HEALTH_CHECKER_REASONS + tuple(extra))


def slurm_signals(rows, now, checker_prefixes=()):
    """rows: (node, state, reason, reason_time or None) as sinfo/scontrol report them.

    ``checker_prefixes``: more health-checker reason prefixes (lower case) the site uses."""
    signals, operator, ours = [], [], []
    extra = tuple(p.lower() for p in checker_prefixes)
    for node, state, reason, reason_time in rows:
        kind = _kind(_flags(state))
        if kind is None:
            continue
        reason = (reason or "").strip()
        if reason.lower().startswith(OURS):
            ours.append(node)
        elif _is_checker(reason, extra) or (not reason and kind != "slurm_drain"):
            said = reason or "no reason given"
            signals.append(Signal(node, "slurm", kind, f"Slurm {state}: {said}",
                                  float(reason_time if reason_time is not None else now)))
        else:
            # A person set it (or a drain without reason: Slurm requires one, so a person
            # bypassed it): never ours to undo.
            operator.append(OperatorDrain(node, str(state), reason or "(no reason)"))
    return Detection(tuple(signals), tuple(operator), tuple(ours))


def health_check_signals(node, failed_checks, now):
    """The short idle health check (XID, ECC, remapped rows, DCGM level 1): one signal per
    failed check name, whatever the name (an unknown failed check is still a failure)."""
    return tuple(Signal(node, "health_check", "health_check",
                        f"idle health check {name} failed", float(now))
                 for name in sorted(set(failed_checks)))


def redfish_signals(node, health, power_state, ledger_power_on, now):
    """``health``: the system's Status.Health (None: could not be read); ``power_state``:
    PowerState; ``ledger_power_on``: the ledger believes the node is powered on."""
    found = []
    if health is None:
        found.append(Signal(node, "redfish", "bmc_health",
                            "BMC system health could not be read", float(now)))
    elif str(health).lower() not in _OK_HEALTH:
        found.append(Signal(node, "redfish", "bmc_health",
                            f"BMC reports system health {health}", float(now)))
    if ledger_power_on and str(power_state).lower() != "on":
        found.append(Signal(node, "redfish", "power_off",
                            f"powered {power_state or 'unknown'} while the ledger says on",
                            float(now)))
    return tuple(found)
