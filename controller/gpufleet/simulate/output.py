"""Output files of a run (``--json``, ``--plot``): checked before the run, written whole or not at all.

A run over a month of per-minute demand takes minutes; a missing or read-only folder found
only at the end would waste it, so ``check_writable`` creates and removes a probe file in the
folder first. ``write_atomically`` writes to a temporary file beside the target and renames it
over the target, so a failure (disk full, a plotting error) never leaves a partial file.
"""
import os
import secrets
import tempfile

from gpufleet.simulate.errors import SimulateError

__all__ = ["check_writable", "write_atomically"]


def check_writable(path, flag):
    """SimulateError naming ``flag`` unless a file can be written at ``path``."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise SimulateError("%s %s is a folder. Give a file path, e.g. %s." % (flag, path, os.path.join(path, "out")))
    if not os.path.isdir(folder):
        raise SimulateError("%s %s: the folder %s does not exist. Create it or pick another path."
                            % (flag, path, folder))
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".gpufleet-probe-"):
            pass
    except OSError as exc:
        raise SimulateError("%s %s: cannot write in %s (%s). Pick a writable folder."
                            % (flag, path, folder, exc.strerror or exc)) from None


def write_atomically(path, write, flag):
    """Call ``write(temporary_path)``, then rename the file over ``path``; nothing is left on failure."""
    folder, name = os.path.split(os.path.abspath(path))
    temporary = os.path.join(folder, ".%s.%s.tmp" % (name, secrets.token_hex(4)))
    try:
        write(temporary)
        os.replace(temporary, path)
    except OSError as exc:
        raise SimulateError("%s %s: cannot write it (%s). Check the folder and free space."
                            % (flag, path, exc.strerror or exc)) from None
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
