"""Where demand comes from: one small interface, Slurm its first implementation.

A ``DemandSource`` answers two questions per reconcile pass: which jobs are pending or
running (``jobs()``, the planner's ``Job`` with ``pool`` unset: the policy maps them), and
how the scheduler sees each node (``nodes()``: name -> SchedulerNode-like object with
``state``, ``flags``, ``drained``, ``schedulable``). A Kubernetes source (pending pods asking
for GPUs, Kueue ProvisioningRequests) implements the same two methods.
"""
import shlex
import subprocess
from typing import Dict, Protocol, Tuple

from gpufleet.capacity.model import Job
from gpufleet.controller import slurm_json
from gpufleet.controller.errors import SchedulerOutputError

__all__ = ["DemandSource", "SlurmSource", "run_command"]


class DemandSource(Protocol):
    name: str

    def jobs(self) -> Tuple[Job, ...]:
        """Pending and running jobs (fails closed: raise, never return a partial list)."""

    def nodes(self) -> Dict[str, object]:
        """The scheduler's view of each node it knows."""


def run_command(argv, timeout):
    """Run ``argv``; its stdout, or SchedulerOutputError naming the command, exit and stderr."""
    shown = " ".join(shlex.quote(a) for a in argv)
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise SchedulerOutputError("%s: %s is not installed or not on PATH." % (shown, argv[0]), command=shown)
    except subprocess.TimeoutExpired:
        raise SchedulerOutputError("%s did not answer within %s s (is slurmctld up?)." % (shown, timeout),
                                   command=shown)
    if proc.returncode != 0:
        raise SchedulerOutputError("%s failed (exit %d): %s" % (shown, proc.returncode, proc.stderr.strip()[-500:]),
                                   command=shown)
    return proc.stdout


class SlurmSource:
    """``squeue --json`` / ``sinfo --json`` on the Slurm controller host.

    ``prefix`` runs the commands elsewhere: ``docker exec gpufleet-lab-slurmctld`` in the
    lab, ``ssh slurm-ctl`` on a site whose controller host is not this one; empty runs them
    here. ``runner(argv, timeout) -> stdout`` is injectable for tests.
    """
    name = "slurm"

    def __init__(self, prefix=(), timeout=30.0, runner=run_command):
        self.prefix = tuple(prefix)
        self.timeout = timeout
        self.runner = runner

    def _run(self, *argv):
        return self.runner(list(self.prefix) + list(argv), self.timeout)

    def jobs(self):
        return slurm_json.parse_squeue(self._run("squeue", "--json", "--all"))

    def nodes(self):
        return slurm_json.parse_sinfo(self._run("sinfo", "--json"))
