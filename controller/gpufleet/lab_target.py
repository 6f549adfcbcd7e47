"""What ``--lab`` means for the commands that run against a fleet (run, controller, why, seam,
report --fleet): the running lab's variable file, build/lab/vars.yml (written by
``gpufleet lab up``), names the ledger and the Slurm controller container; the lab's rack
inventory is inventories/lab.rack.yml. Read as files: the controller package never imports
the lab package."""
import os

from ansible_collections.gpufleet.baremetal.plugins.module_utils import strict_yaml
from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.strict_yaml import StrictYamlError
from gpufleet.collection import repo_path

__all__ = ["LAB_VARS", "LAB_INVENTORY", "NoRunningLab", "VarsFileError", "vars_path", "inventory_path",
           "merged_vars", "slurm_prefix"]

LAB_VARS = ("build", "lab", "vars.yml")
LAB_INVENTORY = ("inventories", "lab.rack.yml")


class NoRunningLab(GpufleetError, LookupError):
    """--lab without a running lab (build/lab/vars.yml is missing)."""


class VarsFileError(GpufleetError, ValueError):
    """A variable file cannot be used: unreadable, not YAML, a key twice, not a mapping."""


def vars_path():
    return repo_path(*LAB_VARS)


def inventory_path():
    return repo_path(*LAB_INVENTORY)


def merged_vars(paths):
    """The variable files merged in order (later wins); a missing lab file says to start the lab.

    Read with the project's strict YAML reader: a key written twice (which value would win?)
    is an error, as in every YAML file the project reads."""
    merged = {}
    for path in paths:
        if not os.path.exists(path) and os.path.abspath(path) == vars_path():
            raise NoRunningLab("No running lab: %s is missing. Start one with `gpufleet lab up`." % path)
        try:
            data = strict_yaml.load_file(path)
        except StrictYamlError as exc:
            raise VarsFileError("Variable file %s" % exc.msg, source=str(path)) from None
        if not isinstance(data, (dict, type(None))):
            raise VarsFileError("Variable file %s: the top level is a %s, not a mapping of variables; fix: write "
                                "name: value lines" % (path, type(data).__name__), source=str(path))
        merged.update(data or {})
    return merged


def slurm_prefix(merged):
    """Run Slurm's commands inside the lab's slurmctld container."""
    return ["docker", "exec", merged["gpufleet_slurm_controller_host"]]
