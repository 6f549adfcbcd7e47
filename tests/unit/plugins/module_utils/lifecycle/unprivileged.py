"""Read a ledger the way a user without write access does (root ignores file modes).

``read_only_ledger`` builds a ledger in a folder everyone can traverse and takes write
access away from the file (and, unless asked not to, its folder); ``as_unprivileged``
runs a function as that user: in a forked child as ``nobody`` when the tests run as
root, else in this process. Import every module the function needs before calling it:
the child may not read the virtual environment.
"""
import json
import os
import shutil
import stat
import tempfile
from contextlib import contextmanager

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger

NOBODY = 65534


@contextmanager
def read_only_ledger(folder_writable=False, build=None):
    """The path of a WAL ledger holding node n1 (or what ``build(path)`` makes), read-only."""
    top = tempfile.mkdtemp(prefix="gpufleet-ro-")
    os.chmod(top, 0o755)
    folder = os.path.join(top, "state")
    os.mkdir(folder)
    path = os.path.join(folder, "ledger.sqlite")
    if build:
        build(path)
    else:
        book = Ledger(path)
        book.transition("n1", "enrolled", "t", "new", sku="lab")
        book.close()
    os.chmod(path, 0o444)
    os.chmod(folder, 0o777 if folder_writable else 0o555)
    try:
        yield path
    finally:
        os.chmod(folder, 0o755)
        shutil.rmtree(top)


def as_unprivileged(func):
    """``func()``'s JSON-able result, computed by a user who cannot write the ledger."""
    if os.geteuid() != 0:
        return func()
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            answer = {"result": func()}
        except BaseException as exc:  # pylint: disable=broad-except
            answer = {"raised": "%s: %s" % (type(exc).__name__, exc)}
        os.write(writer, json.dumps(answer).encode("utf-8"))
        os._exit(0)
    os.close(writer)
    chunks = []
    while True:
        chunk = os.read(reader, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(reader)
    os.waitpid(pid, 0)
    answer = json.loads(b"".join(chunks).decode("utf-8"))
    assert "raised" not in answer, answer["raised"]
    return answer["result"]


def files_in(path):
    """Names and modes of the files beside ``path``: what a reader must leave unchanged."""
    folder = os.path.dirname(path)
    return dict((name, stat.S_IMODE(os.stat(os.path.join(folder, name)).st_mode))
                for name in sorted(os.listdir(folder)))
