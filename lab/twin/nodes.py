"""The node manager: BMC events in, node containers out.

Each lab node is a container started from the node's "disk" (a docker image written
by the installer, see media.py). The BMC emulators (lab/bmc) post events here:

- ``vmedia_inserted`` / ``vmedia_ejected``: remember the node's virtual media;
- ``power_on``: read the node's boot override from its BMC (Redfish, like firmware at
  POST); boot ``Cd`` with media inserted runs the installer once per insertion, then the
  node boots its disk: the container starts (a new one when the disk changed);
- ``power_off``: the container is killed (its filesystem persists, like a disk).

Per-node state (disk, media, last error) lives in ``<state_dir>/nodes/<node>.json`` and a
console log in ``<node>.console``; both survive a manager restart.
"""
import json
import os
import time

from lab.twin import boottime
from lab.twin.errors import LabError

__all__ = ["NodeManager", "NodeStore"]


class NodeStore:
    """Per-node JSON records and console logs on disk."""

    def __init__(self, folder):
        self.folder = folder
        os.makedirs(folder, exist_ok=True)

    def _path(self, node, ext):
        return os.path.join(self.folder, "%s.%s" % (node, ext))

    def get(self, node):
        try:
            with open(self._path(node, "json")) as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return {"disk": None, "media": None, "installed_media": None, "last_error": None}

    def put(self, node, record):
        tmp = self._path(node, "json.tmp")
        with open(tmp, "w") as handle:
            json.dump(record, handle, indent=1, sort_keys=True)
        os.replace(tmp, self._path(node, "json"))

    def console(self, node, line):
        with open(self._path(node, "console"), "a") as handle:
            handle.write("%s %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), line))


class NodeManager:
    """Applies BMC events to node containers; every collaborator is injected."""

    def __init__(self, cfg, docker, installer, boot_reader, store):
        self.cfg = cfg
        self.docker = docker
        self.installer = installer
        self.boot_reader = boot_reader
        self.store = store

    def handle(self, event):
        """Apply one event (a dict as lab/bmc/events.py posts it)."""
        node = event.get("name")
        kind = event.get("event")
        if not node or kind not in ("power_on", "power_off", "vmedia_inserted", "vmedia_ejected"):
            raise LabError("Node manager: unusable event %r (needs name and a known event)." % (event,))
        self.cfg.node(node)  # refuses a system that is not a lab node
        record = self.store.get(node)
        if kind == "vmedia_inserted":
            record.update(media=event.get("image"), installed_media=None)
            self.store.console(node, "virtual media inserted: %s" % event.get("image"))
        elif kind == "vmedia_ejected":
            record.update(media=None, installed_media=None)
            self.store.console(node, "virtual media ejected")
        elif kind == "power_off":
            self._halt(node)
        else:
            record = self._boot(node, record)
        self.store.put(node, record)
        return record

    def _halt(self, node):
        name = self.cfg.container(node)
        if self.docker.running(name):
            self.docker("kill", name)  # the power is gone: nothing runs on after it
        self.store.console(node, "powered off")

    def _boot(self, node, record):
        boot = self.boot_reader(node)
        self.store.console(node, "powered on; boot override %s (%s)" % (boot.get("target"), boot.get("enabled")))
        installed = False
        if boot.get("target") == "Cd" and record.get("media"):
            if boot.get("enabled") == "Continuous" or record.get("installed_media") != record["media"]:
                record = self._install(node, record)
                installed = record.get("last_error") is None
        if not record.get("disk"):
            self.store.console(node, "no bootable disk: the node halts (image it through virtual media)")
            return record
        self._start(node, record["disk"], fresh=installed)
        return record

    def _install(self, node, record):
        self.store.console(node, "booting the installer from %s" % record["media"])
        try:
            disk = self.installer.install(node, record["media"])
        except LabError as exc:
            record["last_error"] = exc.msg
            record["installed_media"] = record["media"]
            self.store.console(node, "INSTALL REFUSED: %s" % exc.msg)
            return record
        record.update(disk=disk["disk"], version=disk["version"], artifact_sha256=disk["artifact_sha256"],
                      installed_media=record["media"], last_error=None, imaged_at=time.time())
        self.store.console(node, "disk written: image %s (%s)" % (disk["version"], disk["disk"]))
        return record

    def _start(self, node, disk, fresh=False):
        name = self.cfg.container(node)
        current = self.docker.image_of(name)
        if current and (fresh or current != disk):
            # reimaged (even with the same image): the old root filesystem is gone
            self.docker("rm", "-f", name)
            current = ""
        if current:
            self.docker("start", name)
        else:
            self.docker(*self.run_args(node, disk))
        self.store.console(node, "booted disk %s as container %s" % (disk, name))

    def run_args(self, node, disk):
        """``docker run`` argv for a node (no privileges; hwsim and models mounted read-only)."""
        cfg = self.cfg
        hwsim_root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "hwsim")
        return ["run", "-d", "--name", cfg.container(node), "--hostname", node,
                # LAB SIMULATION (lab/twin/boottime.py): once enabled, the container's start is
                # the node's boot (a pass-through until then)
                "-v", "%s:%s:ro" % (boottime.directory(cfg), boottime.MOUNT),
                "-e", "LD_PRELOAD=%s/%s" % (boottime.MOUNT, boottime.LIBRARY),
                "--network", cfg.docker["network"], "--network-alias", node,
                "--label", self.docker.LABEL, "--label", "gpufleet-lab.node=" + node,
                "-v", "%s:/opt/gpufleet-lab-hwsim:ro" % hwsim_root,
                "-v", "%s:/etc/gpufleet-lab:ro" % cfg.path("hwsim", node),
                # every node's model, for the multi-node shims (mpirun/nccl) of a fabric test
                "-v", "%s:/etc/gpufleet-lab-fleet:ro" % cfg.path("hwsim"),
                # an init that reaps: daemons a role stops (slurmd, munged) must not stay
                # zombies of `sleep`, or every "is it still running?" check waits its timeout
                "--init",
                # the gate's fio qualifies a RAM disk here: the CI host's disk is shared with
                # VM tests, so its speed would say which test ran beside, not whether I/O works
                "--tmpfs", "/var/tmp/gpufleet-gate:size=128m",
                disk, "sleep", "infinity"]
