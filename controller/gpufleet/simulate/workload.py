"""Demand levels become jobs: the conversion the simulator documents (docs/capacity.md).

A trace gives, per sample, how many GPUs users want (running + pending), split into gang
demand (jobs of >= 8 GPUs) and single-node demand. Each class is a stack of jobs:
- demand rises by d GPUs: new jobs are pushed, submitted at that sample. Gang: one job of
  ceil(d / gpus_per_node) nodes (all at once or not). Single-node: the top job first fills
  its node up to gpus_per_node, then jobs of one node each, so s GPUs of single-node
  demand always need ceil(s / gpus_per_node) nodes;
- demand falls by d GPUs: the newest jobs finish first (last in, first out); the top job
  shrinks when d does not cover it, a running gang then releases the nodes it no longer needs.
  A pending gang never changes size (Slurm keeps a queued job's node count): it is withdrawn
  and a new, smaller gang is submitted in its place.
A job still pending when its demand ends never ran: its wait counts up to that moment.
"""
import math

from gpufleet.capacity.model import Job

__all__ = ["SimJob", "Workload"]


class SimJob:
    __slots__ = ("seq", "job_id", "gang", "gpus", "nodes", "submit", "start", "end", "assigned", "ready_wait",
                 "_view", "_pool", "_partition", "_gpn")

    def __init__(self, seq, job_id, gang, gpus, gpn, submit, pool, partition):
        self.seq, self.job_id, self.gang, self.submit = seq, job_id, gang, submit
        self._gpn, self._pool, self._partition = gpn, pool, partition
        self.start = self.end = None
        self.assigned = []          # node names, set when the job starts
        self.ready_wait = 0.0       # seconds pending while the pool had nodes that were not ready
        self.gpus = self.nodes = 0
        self._view = None
        self.resize(gpus)

    def resize(self, gpus):
        self.gpus = gpus
        self.nodes = max(1, math.ceil(gpus / self._gpn)) if self.gang else 1
        self._view = None

    def started(self, now, nodes):
        self.start, self.assigned = now, list(nodes)
        self._view = None

    @property
    def view(self):
        """The Job the planner reads (cached until the job changes)."""
        if self._view is None:
            running = self.start is not None
            self._view = Job(job_id=self.job_id, nodes=self.nodes, gpus_per_node=min(self.gpus, self._gpn),
                             partition=self._partition, submit_time=self.submit,
                             state="RUNNING" if running else "PENDING", reason="" if running else "Resources",
                             pool=self._pool, nodes_assigned=tuple(self.assigned))
        return self._view


class Workload:
    """The live jobs of one pool, driven by the trace's demand levels."""

    def __init__(self, gpus_per_node, pool, partition=""):
        self.gpn, self.pool, self.partition = gpus_per_node, pool, partition
        self.stacks = {True: [], False: []}   # gang -> jobs, oldest first
        self.seq = 0
        self.by_id = {}                       # live jobs by id
        self.finished = []                    # jobs whose demand ended, in end order
        self.dirty = True
        self._jobs = ()
        self._pending = None

    def level(self, gang):
        return sum(job.gpus for job in self.stacks[gang])

    def update(self, now, gang_gpus, small_gpus):
        """Follow the new levels; returns (released, new): nodes freed by finished or shrunk
        running jobs, and newly submitted jobs."""
        released, new = [], []
        for gang, target in ((True, gang_gpus), (False, small_gpus)):
            delta = target - self.level(gang)
            if delta > 0:
                new.extend(self._push(now, gang, delta))
            elif delta < 0:
                released.extend(self._pop(now, gang, -delta))
            if delta:
                self.changed()
        return released, new

    def _new_job(self, now, gang, gpus):
        self.seq += 1
        job = SimJob(self.seq, "%s-%d" % ("gang" if gang else "job", self.seq), gang, gpus, self.gpn, now,
                     self.pool, self.partition)
        self.stacks[gang].append(job)
        self.by_id[job.job_id] = job
        return job

    def _push(self, now, gang, gpus):
        if gang:
            return [self._new_job(now, True, gpus)]
        stack, new = self.stacks[False], []
        if stack and stack[-1].gpus < self.gpn:
            grow = min(gpus, self.gpn - stack[-1].gpus)
            stack[-1].resize(stack[-1].gpus + grow)
            gpus -= grow
        while gpus > 0:
            new.append(self._new_job(now, False, min(gpus, self.gpn)))
            gpus -= self.gpn
        return new

    def _pop(self, now, gang, gpus):
        stack, released = self.stacks[gang], []
        while gpus > 0 and stack:
            job = stack[-1]
            if job.gpus <= gpus:
                gpus -= job.gpus
                stack.pop()
                del self.by_id[job.job_id]
                job.end = now
                released.extend(job.assigned)
                self.finished.append(job)
                continue
            if job.gang and job.start is None:
                stack.pop()
                del self.by_id[job.job_id]
                job.end = now
                self.finished.append(job)
                self._new_job(now, True, job.gpus - gpus)
                break
            job.resize(job.gpus - gpus)
            gpus = 0
            if job.start is not None and len(job.assigned) > job.nodes:
                released.extend(job.assigned[job.nodes:])
                job.started(job.start, job.assigned[:job.nodes])
        return released

    def changed(self):
        """A job was added, resized, started or ended: rebuild the cached views."""
        self.dirty = True
        self._pending = None

    def pending(self):
        """Pending jobs, oldest submission first (the scheduler's FIFO order); do not modify."""
        if self._pending is None:
            jobs = [job for stack in self.stacks.values() for job in stack if job.start is None]
            jobs.sort(key=lambda job: (job.submit, job.seq))
            self._pending = jobs
        return self._pending

    def find(self, job_id):
        return self.by_id.get(job_id)

    def jobs(self):
        """All live jobs as planner Job views (cached until something changes)."""
        if self.dirty:
            self._jobs = tuple(job.view for stack in self.stacks.values() for job in stack)
            self.dirty = False
        return self._jobs
