"""The controller's liveness metrics, read back from their CollectorRegistry."""
import platform
from types import SimpleNamespace

from gpufleet.controller.liveness import NAMES, Liveness


def value(registry, name, **labels):
    return registry.get_sample_value(name, labels or None)


def test_build_info_carries_the_version():
    live = Liveness(build_version="1.2.3")
    assert value(live.registry, "gpufleet_controller_build_info", version="1.2.3",
                 python_version=platform.python_version()) == 1


def test_a_successful_pass_sets_the_timestamp_and_a_skipped_one_does_not():
    live = Liveness()
    reg = live.registry
    assert value(reg, "gpufleet_controller_last_successful_pass_timestamp_seconds") == 0
    live.observe(SimpleNamespace(error=None), 1000.0, 1001.5)
    assert value(reg, "gpufleet_controller_last_successful_pass_timestamp_seconds") == 1001.5
    live.observe(SimpleNamespace(error="squeue failed"), 1010.0, 1045.0)
    assert value(reg, "gpufleet_controller_last_successful_pass_timestamp_seconds") == 1001.5
    assert value(reg, "gpufleet_controller_passes_total", result="ok") == 1
    assert value(reg, "gpufleet_controller_passes_total", result="skipped") == 1
    assert value(reg, "gpufleet_controller_pass_duration_seconds_count") == 2
    assert value(reg, "gpufleet_controller_pass_duration_seconds_sum") == 36.5
    assert value(reg, "gpufleet_controller_pass_duration_seconds_bucket", le="2.5") == 1
    assert value(reg, "gpufleet_controller_pass_duration_seconds_bucket", le="30.0") == 1
    assert value(reg, "gpufleet_controller_pass_duration_seconds_bucket", le="60.0") == 2


def test_every_listed_name_is_exported():
    reg = Liveness().registry
    exported = {s.name for family in reg.collect() for s in family.samples}
    for name in NAMES:
        assert name in exported or name + "_count" in exported, name
