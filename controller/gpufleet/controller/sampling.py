"""Slurm node samples for the seam: what the controller loop records each pass.

The seam splits a joined node's time by Slurm's state (busy, idle, drained, down), which
only the samples in the ledger (``node_samples``) can tell afterwards. Recording every node
every pass would write 8,640 rows per node per day at a 10 s interval; ``SampleRecorder``
writes a node only when its state or reason changed since the last one it wrote (the seam
holds a sample until the next), plus once when the controller starts. Call ``record`` from
the loop's non-dry-run pass with the ``sinfo`` nodes it read (gpufleet.controller.slurm_json).
"""
__all__ = ["SampleRecorder", "state_text", "changes"]


def state_text(slurm_node):
    """The controller's SlurmNode as one text: base state and flags, ``IDLE+DRAIN``."""
    return "+".join((slurm_node.state,) + tuple(sorted(slurm_node.flags)))


def changes(last, slurm_nodes):
    """[(node, text, reason)] whose (text, reason) differs from ``last`` (node -> (text, reason))."""
    seen = {name: (state_text(node), node.reason or "") for name, node in sorted(slurm_nodes.items())}
    return [(name,) + current for name, current in seen.items() if last.get(name) != current]


class SampleRecorder:
    def __init__(self):
        self.last = {}

    def record(self, ledger, slurm_nodes, now):
        """Write the changed samples (one transaction each); returns how many were written."""
        from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import decisions
        written = 0
        for name, text, reason in changes(self.last, slurm_nodes):
            decisions.record_node_sample(ledger, now, name, text, reason or None)
            self.last[name] = (text, reason)
            written += 1
        return written
