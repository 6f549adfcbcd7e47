"""Lab BMC events: power changes that landed and virtual media insert/eject.

Each event is one JSON object::

    {"time": 1763771234.5, "rack": "r1", "event": "power_on", "system_id": "<uuid>",
     "name": "r1-n01", "power_state": "On", "image": null}

``event`` is one of power_on, power_off, vmedia_inserted, vmedia_ejected. It is POSTed to
``hook_url`` (from a background thread, so a slow receiver never stalls the BMC) and/or
appended to ``events_file`` (JSONL, one line per event, flushed at once).
"""
import json
import logging
import queue
import threading
import time

import requests

__all__ = ["Events"]

LOG = logging.getLogger("gpufleet.lab.bmc")


class Events:
    def __init__(self, rack, hook_url=None, events_file=None):
        self.rack = rack
        self.hook_url = hook_url
        self.events_file = events_file
        self._lock = threading.Lock()
        self._queue = queue.Queue()
        if hook_url:
            threading.Thread(target=self._post_loop, name="lab-bmc-hook", daemon=True).start()

    def emit(self, event, system_id, name, **fields):
        record = dict(time=round(time.time(), 3), rack=self.rack, event=event,
                      system_id=system_id, name=name)
        record.update(fields)
        if self.events_file:
            line = json.dumps(record, sort_keys=True) + "\n"
            with self._lock, open(self.events_file, "a") as handle:
                handle.write(line)
        if self.hook_url:
            self._queue.put(record)
        return record

    def _post_loop(self):
        session = requests.Session()
        while True:
            record = self._queue.get()
            try:
                session.post(self.hook_url, json=record, timeout=10)
            except requests.RequestException as exc:
                LOG.warning("lab BMC hook %s did not take event %s for %s: %s",
                            self.hook_url, record["event"], record["name"], exc)
