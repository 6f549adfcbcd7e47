"""Where the controller writes what it produces: playbook run artifacts and reports.

The rule (docs/service.md, "State directory"), first match wins:

1. ``--state-dir`` or ``state_dir:`` of the controller's config file (``configure``);
2. ``$STATE_DIRECTORY``, which systemd sets from the unit's ``StateDirectory=`` (the first
   path when it names several);
3. ``/var/lib/gpufleet`` when systemd itself started this process as a service (``$INVOCATION_ID``
   set and the parent is PID 1), so a unit without ``StateDirectory=`` never writes under the code;
4. the checkout's ``build/`` (the lab and developers: today's ``build/runs``, ``build/reports``).

Run artifacts go to ``<state>/runs/<run id>``. Nothing here creates a directory: the caller
that writes does, and an unwritable one is its error.
"""
import os

__all__ = ["SERVICE_DEFAULT", "resolve", "configure", "current", "runs_dir", "reports_dir", "started_by_systemd"]

SERVICE_DEFAULT = "/var/lib/gpufleet"
_configured = {"path": None, "source": None}


def started_by_systemd(environ=None, ppid=None):
    """True when systemd (PID 1) started this process as a unit: a shell in a desktop terminal
    inherits ``$INVOCATION_ID`` from its terminal's unit too, but its parent is not PID 1."""
    environ = os.environ if environ is None else environ
    ppid = os.getppid() if ppid is None else ppid
    return bool(environ.get("INVOCATION_ID")) and ppid == 1


def resolve(explicit=None, environ=None, ppid=None, checkout_build=None):
    """(path, where it came from) by the rule above; ``checkout_build`` is the fallback
    (default: the collection checkout's build/)."""
    environ = os.environ if environ is None else environ
    if explicit:
        return os.path.abspath(explicit), "configured"
    systemd_dirs = [p for p in (environ.get("STATE_DIRECTORY") or "").split(":") if p]
    if systemd_dirs:
        return systemd_dirs[0], "$STATE_DIRECTORY"
    if started_by_systemd(environ, ppid):
        return SERVICE_DEFAULT, "systemd service default"
    if checkout_build is None:
        from gpufleet.collection import repo_path
        checkout_build = repo_path("build")
    return checkout_build, "checkout build/"


def configure(path, source="configured"):
    """Set this process's state directory (the controller command calls it once); None resets."""
    _configured["path"] = os.path.abspath(path) if path else None
    _configured["source"] = source if path else None


def current():
    """(path, source): the configured state directory, else ``resolve()``."""
    if _configured["path"]:
        return _configured["path"], _configured["source"]
    return resolve()


def runs_dir(*parts):
    """``<state>/runs[/parts]``: one folder per playbook run (ansible-runner's private data dir)."""
    return os.path.join(current()[0], "runs", *parts)


def reports_dir(*parts):
    """``<state>/reports[/parts]``: reports the controller writes when nothing else names a place."""
    return os.path.join(current()[0], "reports", *parts)
