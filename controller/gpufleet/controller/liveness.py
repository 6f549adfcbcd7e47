"""The controller's own liveness metrics (prometheus_client), served beside the fleet metrics.

    gpufleet_controller_build_info{version, python_version}              1
    gpufleet_controller_last_successful_pass_timestamp_seconds           epoch s of the last pass that planned
    gpufleet_controller_pass_duration_seconds (histogram)                every pass, by its end
    gpufleet_controller_passes_total{result="ok|skipped"}                passes, skipped: unreadable input

A timestamp, not an "up" flag: an alert computes ``time() - ...`` itself, so a controller that
stopped reporting still ages (docs/service.md, "Metrics and alerts").
"""
import platform
from importlib import metadata

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info

__all__ = ["Liveness", "NAMES", "version"]

NAMES = ("gpufleet_controller_build_info", "gpufleet_controller_last_successful_pass_timestamp_seconds",
         "gpufleet_controller_pass_duration_seconds", "gpufleet_controller_passes_total")
# A pass reads Slurm and the ledger and plans (sub-second to seconds); a slow one is minutes.
_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


def version():
    try:
        return metadata.version("gpufleet")
    except metadata.PackageNotFoundError:
        return "unknown"


class Liveness:
    """The liveness metrics on ``registry`` (a new one by default)."""

    def __init__(self, registry=None, build_version=None):
        self.registry = registry if registry is not None else CollectorRegistry()
        self.build = Info("gpufleet_controller_build", "The running controller's version", registry=self.registry)
        self.build.info({"version": build_version or version(), "python_version": platform.python_version()})
        self.last_success = Gauge("gpufleet_controller_last_successful_pass_timestamp_seconds",
                                  "Unix time the last pass that read the world and planned ended",
                                  registry=self.registry)
        self.duration = Histogram("gpufleet_controller_pass_duration_seconds", "Seconds one reconcile pass took",
                                  buckets=_BUCKETS, registry=self.registry)
        self.passes = Counter("gpufleet_controller_passes", "Reconcile passes by result (skipped: unreadable input)",
                              ("result",), registry=self.registry)
        for result in ("ok", "skipped"):
            self.passes.labels(result=result)    # both series exist from the start (rate() sees 0)

    def observe(self, result, started, ended):
        """One pass ended: ``result.error`` None is a successful pass."""
        self.duration.observe(max(0.0, ended - started))
        ok = getattr(result, "error", None) is None
        self.passes.labels(result="ok" if ok else "skipped").inc()
        if ok:
            self.last_success.set(ended)
