"""Day-2 Redfish detection: one fleet read per interval, off the pass, each reading used once."""
import json

from gpufleet.capacity.model import NodeView
from gpufleet.controller.bmc import BmcWatch, signals_from

VIEWS = (NodeView("n1", "lab", "hot", "hot"), NodeView("n2", "lab", "idle", "joined"),
         NodeView("n3", "lab", "warm", "parked"))


def test_signals_power_off_while_in_service_and_health_not_ok():
    readings = {"n1": {"health": "OK", "power_state": "Off"}, "n2": {"health": "Critical", "power_state": "On"},
                "n3": {"health": "OK", "power_state": "Off"}, "n9": {"health": None}}
    found = {(s.node, s.kind) for s in signals_from(readings, VIEWS, 5.0)}
    assert found == {("n1", "power_off"), ("n2", "bmc_health")}     # parked n3 is off on purpose


def test_one_read_per_interval_and_each_reading_handed_over_once(tmp_path):
    calls = []

    def run(targets, out_path, run_id):
        calls.append(targets)
        with open(out_path, "w") as handle:
            json.dump({"n1": {"health": "OK", "power_state": "Off", "error": None}}, handle)
        return 0
    watch = BmcWatch(run, 60.0, str(tmp_path))
    assert watch(VIEWS, 0.0) == ()            # the read starts in the background
    watch.wait(10)
    assert [s.kind for s in watch(VIEWS, 10.0)] == ["power_off"]
    assert watch(VIEWS, 20.0) == ()           # used once; no new read before the interval
    assert calls == [["n1", "n2"]]            # only nodes in service
    watch(VIEWS, 60.0)
    watch.wait(10)
    assert len(calls) == 2


def test_an_unusable_reading_is_said_and_gives_nothing(tmp_path):
    (tmp_path / "reading.json").write_text('{"n1": {"health": "OK", "power_state": "Off"}}')   # an old one
    said = []
    watch = BmcWatch(lambda targets, out_path, run_id: 2, 60.0, str(tmp_path), say=said.append)
    watch(VIEWS, 0.0)
    watch.wait(10)
    assert watch(VIEWS, 1.0) == () and "gave nothing usable" in said[0]


def test_no_interval_reads_nothing(tmp_path):
    watch = BmcWatch(lambda *a: 1 / 0, None, str(tmp_path))
    assert watch(VIEWS, 0.0) == ()
