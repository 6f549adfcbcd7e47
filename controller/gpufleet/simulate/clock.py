"""The simulated clock: the current time and a queue of timed events.

Events are (time, order, kind, payload); ``order`` keeps events of the same time in the order
they were scheduled, so a run is reproducible for a given latency seed.
"""
import heapq
import itertools

__all__ = ["Clock"]


class Clock:
    def __init__(self, start):
        self.now = start
        self._queue = []
        self._order = itertools.count()

    def at(self, when, kind, payload=None):
        heapq.heappush(self._queue, (when, next(self._order), kind, payload))

    def pop_before(self, limit):
        """The earliest event strictly before ``limit`` (advancing ``now`` to it), or None."""
        if not self._queue or self._queue[0][0] >= limit:
            return None
        when, _, kind, payload = heapq.heappop(self._queue)
        self.now = max(self.now, when)
        return kind, payload
