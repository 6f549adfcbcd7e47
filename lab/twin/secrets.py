"""Per-lab secrets: generated once per lab into ``<state_dir>/secrets/`` (0700 dir, 0600 files).

Every lab gets its own random BMC password and munge key, so a search of what a run wrote
for them finds real leaks (a fixed lab password would match everywhere). Nothing but the
files themselves holds the values: configs, vars files and logs name the file instead.
"""
import os
import secrets

from lab.twin.errors import LabError

__all__ = ["SECRET_DIR", "secret_path", "ensure_secret", "read_secret", "store_secret", "BMC_PASSWORD", "MUNGE_KEY"]

SECRET_DIR = "secrets"
BMC_PASSWORD = "bmc-password"
MUNGE_KEY = "munge.key"
# Text, not bytes: the cluster_join role installs the munge key from a string variable.
_GENERATORS = {BMC_PASSWORD: lambda: secrets.token_urlsafe(24), MUNGE_KEY: lambda: secrets.token_hex(64)}


def secret_path(state_dir, name):
    return os.path.join(state_dir, SECRET_DIR, name)


def store_secret(state_dir, name, value):
    """Write ``value`` to the secret file ``name`` (mode 0600, replaced atomically)."""
    path = secret_path(state_dir, name)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = path + ".tmp"
    if os.path.exists(tmp):
        os.remove(tmp)
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as handle:
        handle.write(value)
    os.replace(tmp, path)
    return path


def read_secret(state_dir, name):
    path = secret_path(state_dir, name)
    try:
        with open(path) as handle:
            value = handle.read().strip()
    except OSError as exc:
        raise LabError("Cannot read the lab secret %s: %s. Run `gpufleet lab up` (it generates the lab's "
                       "secrets) or `gpufleet lab down --purge` to start a new lab." % (path, exc.strerror or exc))
    if not value:
        raise LabError("The lab secret %s is empty. Delete it and run `gpufleet lab up` to generate a new one."
                       % path)
    return value


def ensure_secret(state_dir, name):
    """The path of secret ``name``, generated at random first when the lab has none yet."""
    path = secret_path(state_dir, name)
    if not os.path.exists(path):
        store_secret(state_dir, name, _GENERATORS[name]())
    if os.stat(path).st_mode & 0o077:
        os.chmod(path, 0o600)
    return path
