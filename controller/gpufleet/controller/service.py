"""What the reconcile loop tells the world outside it when it runs as a service.

``Reconciler.hooks`` (controller/loop.py) calls ``waiting`` while another controller holds the
lease, ``ready`` once it holds the lease and resumed what was left in flight, ``passed``
after each pass and ``stopping`` before the shutdown drain. Here that becomes systemd
notifications (controller/notify.py), the liveness metrics (controller/liveness.py) and the
retention of run folders (controller/retention.py).
"""
import threading
import time

from gpufleet.controller import retention as _retention

__all__ = ["ServiceHooks"]


class ServiceHooks:
    """``in_flight()`` -> the run ids of runs in flight (never pruned); ``say`` logs a line."""

    def __init__(self, notifier, liveness, retention, runs_dir, in_flight=lambda: (), say=lambda text: None,
                 clock=time.time, interval=None):
        self.notifier, self.liveness, self.retention = notifier, liveness, retention
        self.runs_dir, self.in_flight, self.say, self.clock, self.interval = runs_dir, in_flight, say, clock, interval
        self._stop = threading.Event()
        self._said_prune_errors = set()

    def waiting(self, holder):
        """A standby controller is up and healthy: ready for systemd, the watchdog fed per poll."""
        status = "standby: controller %s holds the lease" % holder
        self.notifier.ready(status)
        self.notifier.watchdog(status)

    def ready(self):
        every = " every %gs" % self.interval if self.interval else ""
        self.notifier.ready("holding the lease; reconciling%s" % every)

    def passed(self, result, started, ended):
        """After each pass: metrics, the watchdog (the loop came round), status, then pruning."""
        self.liveness.observe(result, started, ended)
        error = getattr(result, "error", None)
        if error:
            status = "pass skipped: %s" % str(error).splitlines()[0][:200]
        else:
            status = "last pass ok %.1fs, %d started, %d finished" % (
                ended - started, len(getattr(result, "started", ())), len(getattr(result, "finished", ())))
        self.notifier.watchdog(status)
        self.prune()

    def prune(self):
        if self.retention is None or not self.retention.enabled:
            return []
        deleted, errors = _retention.prune(self.runs_dir, self.clock(), self.retention, set(self.in_flight()))
        if deleted:
            self.say("retention: removed %d run folder(s) under %s (oldest %s)" % (len(deleted), self.runs_dir,
                                                                               deleted[0]))
        for name, why in errors:
            if name not in self._said_prune_errors:     # said once, not every pass
                self._said_prune_errors.add(name)
                self.say("retention: cannot remove %s/%s: %s" % (self.runs_dir, name, why))
        return deleted

    def stopping(self):
        self.notifier.stopping("stopping: waiting for running playbooks, then releasing the lease")
        self.notifier.keep_alive(self._stop)

    def stopped(self):
        self._stop.set()
