"""The only file of the lab that runs ``docker``; tests inject a fake runner."""
import subprocess

from lab.twin.errors import LabError

__all__ = ["Docker"]


class Docker:
    """``docker`` CLI calls; every object the lab creates carries the ``gpufleet-lab`` label."""

    LABEL = "gpufleet-lab=1"

    def __init__(self, run=subprocess.run):
        self._run = run

    def __call__(self, *args, check=True, stdin=None, input_bytes=None):
        proc = self._run(["docker"] + list(args), input=input_bytes, stdin=stdin,
                         capture_output=True)
        if check and proc.returncode != 0:
            err = proc.stderr.decode(errors="replace") if isinstance(proc.stderr, bytes) else proc.stderr
            raise LabError("docker %s failed (exit %d): %s" % (" ".join(args[:2]), proc.returncode,
                                                              (err or "").strip()[-600:]))
        return proc

    def out(self, *args, check=True):
        data = self(*args, check=check).stdout
        return (data.decode(errors="replace") if isinstance(data, bytes) else data or "").strip()

    def exists(self, kind, name):
        return self(kind, "inspect", name, check=False).returncode == 0

    def running(self, container):
        return self.out("inspect", "-f", "{{.State.Running}}", container, check=False) == "true"

    def image_of(self, container):
        """Image reference the container was created from ('' when absent)."""
        return self.out("inspect", "-f", "{{.Config.Image}}", container, check=False)
