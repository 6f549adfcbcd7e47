"""A stand-in for `squeue --json` / `sinfo --json` printing the real Slurm 22.05 fixtures.

    .venv/bin/python benchmarks/controller/reconcile_pass.py \
        --slurm-prefix ".venv/bin/python benchmarks/controller/slurm_standin.py" --ledger /tmp/bench-ledger.sqlite
"""
import os
import sys

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "unit", "gpufleet",
                        "controller", "fixtures")
NAMES = {"squeue": "squeue-22.05-pending.json", "sinfo": "sinfo-22.05-cloud-unregistered.json"}

with open(os.path.join(FIXTURES, NAMES[sys.argv[1]])) as handle:
    sys.stdout.write(handle.read())
