"""The image versions Slurm's nodes carry, kept in the file contrib/slurm/job_submit.lua reads.

Every node carries its image version as the Slurm feature ``image_<version>``
(roles/node_labels). The plugin gives every multi-node job the "matching OR" constraint over
the features listed on the Slurm controller host, so all of a job's nodes run one version
(docs/day2.md, "Slurm side"). The list is read from Slurm's own nodes each pass, never from
the ledger or a rollout's plan: a constraint naming a feature no node has makes slurmctld
refuse the job. When it changes, ``playbooks/image_features.yml`` writes it, in a background
thread so a pass never waits on the Slurm controller host; a failed write is said and tried
again after ``retry`` seconds.
"""
import threading

__all__ = ["PREFIX", "image_features", "FeaturesWriter"]

PREFIX = "image_"


def image_features(slurm_nodes):
    """slurm_nodes: {name: SlurmNode} -> the sorted image features they carry."""
    return tuple(sorted({f for node in slurm_nodes.values() for f in node.features if f.startswith(PREFIX)}))


class FeaturesWriter:
    """callable(slurm_nodes, now): write the list when it differs from the last one written.

    ``run(features, run_id) -> rc`` runs the playbook (injectable). Nothing is written while
    Slurm reports no image feature at all (a Slurm that answered with no nodes is no reason to
    empty the file)."""

    def __init__(self, run, say=lambda text: None, retry=60.0):
        self.run, self.say, self.retry = run, say, retry
        self._lock = threading.Lock()
        self._thread = None
        self.written = None            # the list the file holds, as far as this controller knows
        self._failed = (None, None)    # (list, when) of the last failed write

    def _write(self, wanted, now):
        try:
            rc = self.run(list(wanted), "image-features")
        except Exception as exc:  # noqa: BLE001 - any failure is said and retried, never fatal to the loop
            rc = "error: %s" % exc
        with self._lock:
            if rc == 0:
                self.written, self._failed = wanted, (None, None)
            else:
                self._failed = (wanted, now)
        if rc == 0:
            self.say("image features for job_submit.lua: %s" % " ".join(wanted))
        else:
            self.say("image features %s not written (playbooks/image_features.yml: %s); trying again in %ds"
                     % (" ".join(wanted), rc, self.retry))

    def __call__(self, slurm_nodes, now):
        wanted = image_features(slurm_nodes)
        with self._lock:
            if not wanted or wanted == self.written or (self._thread is not None and self._thread.is_alive()):
                return None
            failed, when = self._failed
            if failed == wanted and now - when < self.retry:
                return None
            self._thread = threading.Thread(target=self._write, args=(wanted, now), daemon=True,
                                            name="gpufleet-image-features")
        self._thread.start()
        return self._thread
