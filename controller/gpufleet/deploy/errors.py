"""The one error of the deploy agent: a step that failed, and why."""
from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError

__all__ = ["DeployError"]


class DeployError(GpufleetError):
    """A deploy step that must stop the install; ``msg`` says what, why and the fix."""

    def __init__(self, step, msg, **details):
        super().__init__("%s: %s" % (step, msg), step=step, **details)
        self.step = step
