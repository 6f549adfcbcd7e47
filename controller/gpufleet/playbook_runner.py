"""Run one of the collection's playbooks on ansible-runner: the one place that knows how.

``gpufleet run`` (a person, live progress) and the capacity controller's actuator (many
actions at once, bounded) both call ``run_playbook``; each run gets its own private data
directory under <state directory>/runs/<run id> (gpufleet.state_dir: the service's state
directory, else the checkout's build/) so concurrent runs never share artifacts.
"""
import os
import sys

from gpufleet.collection import collections_path, repo_path
from gpufleet.state_dir import runs_dir
from gpufleet.runner_artifacts import scrub_artifacts

__all__ = ["PLAYBOOKS", "playbook_path", "runner_env", "run_playbook"]

PLAYBOOKS = ("enroll", "bringup", "gang", "recycle", "decommission", "park", "wake", "hold", "admit", "revalidate",
             "image_features")


def _error(msg):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError
    return GpufleetError(msg)


def playbook_path(name):
    """A playbook path, or a collection playbook name (``gang`` -> playbooks/gang.yml)."""
    path = name if os.path.isfile(name) else repo_path("playbooks", name + ("" if name.endswith(".yml") else ".yml"))
    if not os.path.isfile(path):
        raise _error("Playbook %s not found. Use a path or one of: %s." % (name, ", ".join(PLAYBOOKS)))
    return os.path.abspath(path)


def runner_env():
    """ansible-playbook sees the same collections (and the checkout's ansible.cfg, if any)."""
    env = {"ANSIBLE_COLLECTIONS_PATH": collections_path()}
    config = repo_path("ansible.cfg")
    if os.path.isfile(config):
        env["ANSIBLE_CONFIG"] = config
    return env


def _path_with_this_python():
    # ansible-runner starts ansible-playbook from PATH: the one installed beside this Python.
    bindir = os.path.dirname(sys.executable)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


def run_playbook(playbook, inventory, run_id, extravars=None, var_files=(), limit=None, event_handler=None,
                 timeout=None):
    """Run ``playbook`` and wait; returns (status, rc, artifacts directory).

    ``var_files`` are passed as ``-e @file`` (site variables such as build/lab/vars.yml);
    ``extravars`` win over them. ``timeout`` (seconds) stops a hung run: status 'timeout'.
    """
    import ansible_runner

    private = runs_dir(run_id)
    os.makedirs(private, exist_ok=True)
    cmdline = " ".join("-e @%s" % f for f in var_files)
    _path_with_this_python()
    # ansible-runner writes the run's environment into its artifacts: mask secrets as soon as
    # the file exists (the 'starting' status) and again at the end (gpufleet.runner_artifacts)
    result = ansible_runner.run(
        private_data_dir=private, playbook=playbook_path(playbook), inventory=os.path.abspath(inventory),
        extravars=dict(extravars or {}, gpufleet_run_id=run_id), cmdline=cmdline or None, limit=limit,
        quiet=True, event_handler=event_handler, envvars=runner_env(), timeout=timeout, ident=run_id,
        status_handler=lambda _status, **_kw: scrub_artifacts(private))
    scrub_artifacts(private)
    return result.status, result.rc, os.path.join(private, "artifacts")
