"""The four layers a GPU-hour or a job can be blocked at, by name.

Kept apart from ``categories`` (which reads the collection's lifecycle states) so that
`gpufleet --help` and `gpufleet why` load without the collection installed."""

__all__ = ["LAYERS", "LAYER_NAMES"]

LAYERS = ("L1", "L2", "L3", "L4")
LAYER_NAMES = {"L1": "capacity supply", "L2": "provisioning", "L3": "scheduling", "L4": "workload"}
