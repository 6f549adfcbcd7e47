"""What the Molecule test files share: the environment molecule runs in, the lab helpers
they load by path (lab/ is not a package), and the munge key of the Slurm scenarios."""
import base64
import importlib.util
import os

from tests.helpers import ROOT, VENV_BIN


def load_lab_module(relative_path, name):
    """A lab helper module (e.g. lab/slurm/slurmctld.py) loaded from its file."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, relative_path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def slurm_lab():
    return load_lab_module(os.path.join("lab", "slurm", "slurmctld.py"), "gpufleet_slurm_lab")


def munge_key_file(tmp_path_factory):
    """A fresh text munge key: the roles write cluster_join_munge_key verbatim, the controller
    mounts the file."""
    key = tmp_path_factory.mktemp("munge") / "munge.key"
    key.write_bytes(base64.b64encode(os.urandom(48)))
    return str(key)


def molecule_env(**extra):
    """os.environ plus the venv's tools, the collection and plain output for molecule."""
    env = dict(os.environ)
    env.update({
        "PATH": VENV_BIN + os.pathsep + env.get("PATH", ""),
        "ANSIBLE_COLLECTIONS_PATH": os.path.join(ROOT, "build", "collections"),
        "NO_COLOR": "1", "ANSIBLE_NOCOLOR": "1", "PY_COLORS": "0",
        # One `docker exec` per task instead of mkdir/put/exec/rm: the docker connection pipelines.
        "ANSIBLE_PIPELINING": "True",
    })
    env.update(extra)
    return env
