"""What the Molecule test files share: the environment molecule runs in, the lab's Slurm
helper, and the munge key of the Slurm scenarios."""
import base64
import os
import re

from tests.helpers import ROOT, VENV_BIN


def slurm_lab():
    from lab.slurm import slurmctld
    return slurmctld


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


def scenario_test_count(role, scenario, root=ROOT):
    """How many testinfra test functions the scenario's tests/ folder holds (every test_*.py file)."""
    tests = os.path.join(root, "roles", role, "molecule", scenario, "tests")
    count = 0
    for name in sorted(os.listdir(tests)):
        if name.startswith("test_") and name.endswith(".py"):
            with open(os.path.join(tests, name), encoding="utf-8") as handle:
                count += sum(1 for line in handle if line.startswith("def test_"))
    return count


def passed_count(output):
    """The passed count of testinfra's summary line ("==== 13 passed in 9.1s ===="), or None."""
    found = re.findall(r"=+ (\d+) passed", output)
    return int(found[-1]) if found else None
