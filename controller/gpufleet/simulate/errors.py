"""Errors of the simulator: a bad trace, latency file or run setting, named precisely."""
from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError

__all__ = ["SimulateError", "TraceError"]


class SimulateError(GpufleetError):
    """A simulator input (latency file, option, policy override) is unusable."""


class TraceError(SimulateError):
    """A demand trace cannot be read; the message names the file, line and field."""
