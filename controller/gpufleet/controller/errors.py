"""Errors of the capacity controller's runtime (demand reading, actuation, the loop)."""
from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError

__all__ = ["ControllerError", "SchedulerOutputError", "LeaseHeld"]


class ControllerError(GpufleetError):
    """The controller could not read the world, act, or record: the pass stops (fail closed)."""


class SchedulerOutputError(ControllerError):
    """A scheduler command failed or printed something the parser cannot trust."""


class LeaseHeld(ControllerError):
    """Another controller holds the lease; this one must not act."""
