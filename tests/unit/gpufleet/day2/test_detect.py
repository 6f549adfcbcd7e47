"""Detection: which Slurm states/reasons, health-check results and Redfish readings are signals."""
import pytest

from gpufleet.day2.detect import health_check_signals, redfish_signals, slurm_signals

NOW = 1_800_000_000.0


@pytest.mark.parametrize("state,reason,kind", [
    ("drained", "NHC: check_gpu: XID 79 on GPU 3", "slurm_drain"),
    ("IDLE+DRAIN", "nhc: ecc errors", "slurm_drain"),
    ("down*", "Not responding", "slurm_down"),
    ("DOWN", "ResumeTimeout reached", "slurm_down"),
    ("DOWN+NOT_RESPONDING", "", "slurm_down"),
    ("down", None, "slurm_down"),
    ("fail", "", "slurm_fail"),
    ("FAILING", "Kill task failed", "slurm_fail"),
    ("drained", "Node unexpectedly rebooted", "slurm_drain"),
])
def test_health_reasons_are_signals(state, reason, kind):
    found = slurm_signals([("n1", state, reason, None)], NOW)
    assert [(s.node, s.source, s.kind) for s in found.signals] == [("n1", "slurm", kind)]
    assert found.signals[0].first_seen == NOW
    assert not found.operator and not found.ours


@pytest.mark.parametrize("state,reason", [
    ("drained", "maintenance: swap PSU - bob"),
    ("DRAINING", "reserved for benchmark"),
    ("down", "cable work in rack 4"),
    ("drained", ""),          # a drain without a reason: a person bypassed Slurm's rule
])
def test_operator_drain_left_alone(state, reason):
    found = slurm_signals([("n1", state, reason, None)], NOW)
    assert found.signals == ()
    assert [(o.node, o.state) for o in found.operator] == [("n1", state)]


@pytest.mark.parametrize("state", ["IDLE+CLOUD+NOT_RESPONDING", "idle*", "MIXED+NOT_RESPONDING"])
def test_not_responding_alone_is_no_signal_until_slurm_marks_the_node_down(state):
    # a lab run: right after our own RESUME the node read IDLE+CLOUD+NOT_RESPONDING until
    # slurmctld's next ping, twice, and day-2 drained a healthy node
    found = slurm_signals([("n1", state, "", None)], NOW)
    assert found.signals == () and not found.operator


def test_our_reasons_are_neither_signal_nor_operator():
    found = slurm_signals([("n1", "drained", "gpufleet: day2 recycle", None)], NOW)
    assert (found.signals, found.operator, found.ours) == ((), (), ("n1",))


@pytest.mark.parametrize("state", ["idle", "ALLOCATED", "mixed", "idle~", "completing"])
def test_healthy_states_are_ignored(state):
    found = slurm_signals([("n1", state, "NHC: stale reason", None)], NOW)
    assert (found.signals, found.operator, found.ours) == ((), (), ())


def test_site_checker_prefix_and_reason_time():
    rows = [("n1", "drained", "Site-check: fan", NOW - 300)]
    assert slurm_signals(rows, NOW).signals == ()
    found = slurm_signals(rows, NOW, checker_prefixes=("Site-check:",))
    assert found.signals[0].first_seen == NOW - 300


def test_health_check_one_signal_per_failed_check():
    found = health_check_signals("n1", ["xid", "ecc", "xid", "dcgm_l1", "new_check"], NOW)
    assert [s.reason for s in found] == [
        "idle health check dcgm_l1 failed", "idle health check ecc failed",
        "idle health check new_check failed", "idle health check xid failed"]
    assert health_check_signals("n1", [], NOW) == ()


@pytest.mark.parametrize("health,power,ledger_on,kinds", [
    ("OK", "On", True, []),
    ("Warning", "On", True, ["bmc_health"]),
    ("Critical", "On", True, ["bmc_health"]),
    (None, "On", True, ["bmc_health"]),
    ("OK", "Off", True, ["power_off"]),
    ("OK", None, True, ["power_off"]),
    ("OK", "Off", False, []),           # parked on purpose: the ledger says off
    ("Critical", "Off", True, ["bmc_health", "power_off"]),
])
def test_redfish(health, power, ledger_on, kinds):
    assert [s.kind for s in redfish_signals("n1", health, power, ledger_on, NOW)] == kinds
