import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import decisions as day2_tracks
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger


def _row(node, kind="slurm_drain", seen=(1.0, 2.0), run_start=1.0):
    return dict(node=node, source="slurm", kind=kind, reason="NHC: GPU lost", first_seen=1.0,
                seen=seen, run_start=run_start)


def test_tracks_replace_the_whole_set_and_read_back_exactly(ledger):
    assert day2_tracks.tracks(ledger) == []
    day2_tracks.replace_tracks(ledger, [_row("n2"), _row("n1", run_start=None)])
    got = day2_tracks.tracks(ledger)
    assert [(t["node"], t["seen"], t["run_start"]) for t in got] == [
        ("n1", (1.0, 2.0), None), ("n2", (1.0, 2.0), 1.0)]
    day2_tracks.replace_tracks(ledger, [_row("n3", kind="bmc_health", seen=(5.5,))])
    assert [(t["node"], t["kind"], t["seen"]) for t in day2_tracks.tracks(ledger)] == [
        ("n3", "bmc_health", (5.5,))]


def test_tracks_survive_reopening_the_ledger(ledger, ledger_url, clock):
    day2_tracks.replace_tracks(ledger, [_row("n1")])
    again = Ledger(ledger_url, clock=clock)
    try:
        assert [t["node"] for t in day2_tracks.tracks(again)] == ["n1"]
    finally:
        again.close()


def test_a_track_without_reason_is_refused_and_nothing_is_replaced(ledger):
    day2_tracks.replace_tracks(ledger, [_row("n1")])
    with pytest.raises(LedgerError) as err:
        day2_tracks.replace_tracks(ledger, [dict(_row("n2"), reason="")])
    assert "reason" in err.value.msg
    assert [t["node"] for t in day2_tracks.tracks(ledger)] == ["n1"]
