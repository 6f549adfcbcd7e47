"""Day-2 idle health check: the gate's short ``health`` phase on idle nodes in service, off the pass.

``playbooks/health_check.yml`` runs the collection's acceptance_gate with ``phases: [health]``
(XID, ECC, row remapping, DCGM level 1: the profile's health section) on every idle joined or
hot node, at most every ``day2.health_interval``, in a background thread as the BMC read does
(gpufleet.controller.bmc). A node with a job is never a target, and the playbook skips a node
where a job step runs by the time it gets there. Each finished reading is fed once: failed
checks become ``detect.health_check_signals`` and persistence decides. A run that could not
judge a node (tool missing, output unparseable, node unreachable, no verdict) is a failed
check with its reason, never a pass.
"""
from gpufleet.controller.bmc import BmcWatch
from gpufleet.day2 import detect
from gpufleet.day2.stage import IN_SERVICE

__all__ = ["HealthWatch", "failed_checks", "signals_from"]


def failed_checks(reading):
    """One node's reading {skipped, verdict, failed_checks, error} -> failed check names (with
    reasons where the check itself could not run); () when it passed or was skipped."""
    reading = reading if isinstance(reading, dict) else {}
    if reading.get("skipped"):
        return ()
    if reading.get("error"):
        return ("health check could not run: %s" % str(reading["error"])[:300],)
    verdict = reading.get("verdict")
    if verdict == "pass":
        return ()
    names = [str(n) for n in reading.get("failed_checks") or () if n]
    if verdict == "fail":
        return tuple(names) or ("health check failed without naming a check (%s)" % reading.get("reason"),)
    return ("health check gave no verdict (%r)" % (verdict,),)


def signals_from(readings, views, now):
    """readings: {node: reading}; views: NodeViews -> Signals of the nodes still in service."""
    state = {v.node: v.state for v in views}
    return tuple(signal for node in sorted(readings) if state.get(node) in IN_SERVICE
                 for signal in detect.health_check_signals(node, failed_checks(readings[node]), now))


class HealthWatch(BmcWatch):
    """callable(views, now) -> health-check Signals of the run that finished since the last call."""
    WHAT = "health check"

    def targets(self, views):
        """Idle nodes in service only: a node running a job is never checked."""
        return sorted(v.node for v in views if v.state in IN_SERVICE and not v.jobs)

    def signals(self, readings, views, now):
        return signals_from(readings, views, now)
