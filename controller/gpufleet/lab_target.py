"""What ``--lab`` means for the commands that run against a fleet (run, controller, why, seam,
report --fleet): the running lab's variable file, build/lab/vars.yml (written by
``gpufleet lab up``), names the ledger and the Slurm controller container; the lab's rack
inventory is inventories/lab.rack.yml. Read as files: the controller package never imports
the lab package."""
import os

import yaml

from gpufleet.collection import repo_path

__all__ = ["LAB_VARS", "LAB_INVENTORY", "vars_path", "inventory_path", "merged_vars", "slurm_prefix"]

LAB_VARS = ("build", "lab", "vars.yml")
LAB_INVENTORY = ("inventories", "lab.rack.yml")


def vars_path():
    return repo_path(*LAB_VARS)


def inventory_path():
    return repo_path(*LAB_INVENTORY)


def merged_vars(paths):
    """The variable files merged in order (later wins); a missing lab file says to start the lab."""
    merged = {}
    for path in paths:
        try:
            with open(path) as handle:
                merged.update(yaml.safe_load(handle) or {})
        except FileNotFoundError:
            if os.path.abspath(path) == vars_path():
                raise LookupError("No running lab: %s is missing. Start one with `gpufleet lab up`." % path)
            raise
    return merged


def slurm_prefix(merged):
    """Run Slurm's commands inside the lab's slurmctld container."""
    return ["docker", "exec", merged["gpufleet_slurm_controller_host"]]
