"""Errors of the lab tooling (the `gpufleet lab` command prints them as one line)."""
from gpufleet.collection import ensure_importable

ensure_importable()
from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError  # noqa: E402

__all__ = ["LabError"]


class LabError(GpufleetError):
    """The lab cannot be configured, started, imaged or stopped."""
