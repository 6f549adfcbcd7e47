"""The four-layer fleet view: why a job, node or pool waits, and where paid capacity goes.

Pure functions over explicit inputs (``inputs.FleetInputs``) with the clock passed in:
``why`` answers one subject with the blocking layer and its evidence, ``seam`` splits owned
GPU-hours into busy, schedulable idle and the states that are paid but not schedulable,
``startup`` measures time to schedulable and per-job start breakdowns. ``sources`` is the
only file that reads the world (ledger, policy, Slurm JSON) into those inputs; ``metrics``
serves them to Prometheus. docs/fleet-view.md describes all of it.
"""
