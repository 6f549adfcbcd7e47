"""Day-2 Redfish detection: a periodic fleet read of BMC health and power, off the pass.

One playbook run (playbooks/bmc_health.yml: the collection's redfish_info on every node in
service, in parallel) at most every ``interval`` seconds, in a background thread so a pass
never waits on a BMC. Each finished reading is handed to the day-2 stage ONCE as signals
(gpufleet.day2.detect.redfish_signals): persistence counts readings, not passes.
"""
import json
import os
import threading

from gpufleet.day2 import detect
from gpufleet.day2.stage import IN_SERVICE

__all__ = ["BmcWatch", "signals_from"]


def signals_from(readings, views, now):
    """readings: {node: {health, power_state, error}}; views: NodeViews -> Signals.

    The ledger says a node is on when it is in service (joined or hot)."""
    state = {v.node: v.state for v in views}
    mine = {node: got or {} for node, got in readings.items() if node in state}
    return tuple(signal for node, got in sorted(mine.items())
                 for signal in detect.redfish_signals(node, got.get("health"), got.get("power_state"),
                                                      state[node] in IN_SERVICE, now))


class BmcWatch:
    """callable(views, now) -> Signals of the reading that finished since the last call.

    ``run(targets, out_path, run_id) -> rc`` runs the read (injectable); ``interval`` None
    reads nothing. Subclasses (gpufleet.controller.health) change what is read and from whom
    through ``WHAT``, ``targets`` and ``signals``."""
    WHAT = "BMC read"

    def targets(self, views):
        """The nodes one read covers: every node in service."""
        return sorted(v.node for v in views if v.state in IN_SERVICE)

    def signals(self, readings, views, now):
        return signals_from(readings, views, now)

    def __init__(self, run, interval, out_dir, say=lambda text: None):
        self.run, self.interval, self.out_dir, self.say = run, interval, out_dir, say
        self._lock = threading.Lock()
        self._thread, self._last_start, self._ready = None, None, None

    def _read(self, targets, run_id):
        path = os.path.join(self.out_dir, "reading.json")
        try:
            if os.path.exists(path):
                os.remove(path)     # never hand over the last reading again as a new one
            rc = self.run(targets, path, run_id)
            with open(path) as handle:
                readings = json.load(handle)
        except (OSError, ValueError) as exc:
            self.say("day-2 %s %s gave nothing usable: %s" % (self.WHAT, run_id, exc))
            return
        if rc != 0:
            self.say("day-2 %s %s exited %s; using what it wrote" % (self.WHAT, run_id, rc))
        with self._lock:
            self._ready = readings

    def __call__(self, views, now):
        with self._lock:
            readings, self._ready = self._ready, None
        if self.interval is not None and (self._thread is None or not self._thread.is_alive()) \
                and (self._last_start is None or now - self._last_start >= self.interval):
            targets = self.targets(views)
            if targets:
                self._last_start = now
                # one run id: its artifacts folder is reused, not one more per read
                run_id = self.WHAT.lower().replace(" ", "-")
                self._thread = threading.Thread(target=self._read, args=(targets, run_id), daemon=True,
                                                name="gpufleet-" + run_id)
                self._thread.start()
        return self.signals(readings, views, now) if readings else ()

    def wait(self, timeout=None):
        """Block until the read under way ended (the tests wait on it)."""
        if self._thread is not None:
            self._thread.join(timeout)
