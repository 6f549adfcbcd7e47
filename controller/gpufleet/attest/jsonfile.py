"""Small JSON state files of the attestation package, written atomically and readable by their owner only."""
import json
import os
import tempfile

__all__ = ["write_json_atomic"]


def write_json_atomic(path, document):
    """Write ``document`` to ``path``: temp file in the same folder, mode 0600, fsync, rename.

    A crash leaves either the old file or the new one, never half of one.
    """
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write((json.dumps(document, sort_keys=True, indent=2) + "\n").encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
