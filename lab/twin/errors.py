"""Errors of the lab tooling (the `gpufleet lab` command prints them as one line)."""
import gpufleet  # noqa: F401  (installs Ansible's collection loader; see gpufleet.collection)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError

__all__ = ["LabError"]


class LabError(GpufleetError):
    """The lab cannot be configured, started, imaged or stopped."""
