"""A Redfish BMC for the lab machine: sushy-tools' emulator with its libvirt driver.

The project's Redfish code drives it as it drives a server's BMC: HTTPS with the lab CA,
basic auth from an htpasswd file, virtual media the emulator downloads itself (TLS verified
against the artifact server's CA) into a libvirt storage pool and attaches to the domain's
CD drive, a boot override, power.

LAB SIMULATION (``OnceWatcher``): sushy-tools' libvirt driver keeps no one-time boot
override. It makes the CD the domain's first boot device and leaves it there, reporting
``BootSourceOverrideEnabled: Continuous``; a server's BMC instead clears a ``Once`` override
when the machine boots. The watcher does what the BMC does: when the domain starts, it clears
the boot order from the domain's stored configuration (the running machine keeps the CD
first), and when the guest reboots it starts the machine again, so the reboot boots without
the override: the firmware's own BootOrder, where the deploy agent put the disk first.
"""
import dataclasses
import logging
import os
import queue
import subprocess
import sys
import threading
import time

from lab.bmc import pki as lab_pki
from lab.machine.domain import clear_boot_override, domain_xml
from lab.machine.qemu import OVMF_CODE, OVMF_VARS, OVMF_VARS_NO_KEYS, read_text
from lab.twin.errors import LabError

__all__ = ["LIBVIRT_URI", "sushy_config", "pool_xml", "OnceWatcher", "RedfishMachine"]

LIBVIRT_URI = "qemu:///system"
_LOG = logging.getLogger(__name__)


def _libvirt():
    try:
        import libvirt  # noqa: PLC0415 - lab only; the unit tests of the XML need no libvirt
    except ImportError:
        raise LabError("the libvirt Python binding is missing; fix: pip install libvirt-python "
                       "(needs the libvirt-dev and pkg-config packages), or run make venv")
    # errors reach the caller as exceptions; libvirt's default handler would also print them
    libvirt.registerErrorHandler(lambda *_: None, None)
    return libvirt


def sushy_config(port, cert, key, auth_file, uuid, pool, media_ca, uri=LIBVIRT_URI):
    """The emulator's config file text (Python, read by Flask's ``from_pyfile``)."""
    settings = [
        ("SUSHY_EMULATOR_LISTEN_IP", "127.0.0.1"),
        ("SUSHY_EMULATOR_LISTEN_PORT", int(port)),
        ("SUSHY_EMULATOR_SSL_CERT", cert),
        ("SUSHY_EMULATOR_SSL_KEY", key),
        ("SUSHY_EMULATOR_AUTH_FILE", auth_file),
        ("SUSHY_EMULATOR_LIBVIRT_URI", uri),
        # only this machine: never any other domain the host's libvirt runs
        ("SUSHY_EMULATOR_ALLOWED_INSTANCES", [uuid]),
        ("SUSHY_EMULATOR_STORAGE_POOL", pool),
        # the emulator downloads virtual media itself: verified against the artifact server's CA
        ("SUSHY_EMULATOR_VMEDIA_VERIFY_SSL", media_ca),
        ("SUSHY_EMULATOR_BOOT_LOADER_MAP", {"UEFI": {"x86_64": OVMF_CODE}, "Legacy": {"x86_64": None}}),
        # The driver answers SecureBoot (SecureBootEnable, SecureBootCurrentBoot) from the domain's
        # NVRAM template: this one is "enabled", anything else "disabled" (its defaults name
        # Fedora's files). Its SecureBootMode is a fixed "DeployedMode": read the node's efivars too.
        ("SUSHY_EMULATOR_SECURE_BOOT_ENABLED_NVRAM", OVMF_VARS),
        ("SUSHY_EMULATOR_SECURE_BOOT_DISABLED_NVRAM", OVMF_VARS_NO_KEYS),
    ]
    return "".join("%s = %r\n" % item for item in settings)


def pool_xml(name, path):
    """A directory storage pool: where the emulator uploads the media it downloaded."""
    return ("<pool type='dir'><name>%s</name><target><path>%s</path></target></pool>" % (name, path))


class OnceWatcher:
    """LAB SIMULATION: a boot override lasts one boot (see the module docstring)."""

    def __init__(self, name, uri=LIBVIRT_URI):
        self.name = name
        self.uri = uri
        self.log = []  # (seconds since start, what the watcher did), for the test to show
        self._queue = queue.Queue()
        self._conn = None
        self._callbacks = []
        self._worker = None
        self._started = time.monotonic()
        self._started_event = None   # libvirt's VIR_DOMAIN_EVENT_STARTED, read once in start()

    def start(self):
        libvirt = _libvirt()
        self._started_event = libvirt.VIR_DOMAIN_EVENT_STARTED
        _event_loop(libvirt)
        self._conn = libvirt.open(self.uri)
        domain = self._conn.lookupByName(self.name)
        self._callbacks = [
            self._conn.domainEventRegisterAny(domain, libvirt.VIR_DOMAIN_EVENT_ID_LIFECYCLE, self._lifecycle, None),
            self._conn.domainEventRegisterAny(domain, libvirt.VIR_DOMAIN_EVENT_ID_REBOOT, self._reboot, None)]
        self._worker = threading.Thread(target=self._work, name="once-watcher", daemon=True)
        self._worker.start()
        return self

    def stop(self):
        for callback in self._callbacks:
            try:
                self._conn.domainEventDeregisterAny(callback)
            except Exception:  # the connection may be gone already; nothing left to undo
                pass
        self._callbacks = []
        self._queue.put(None)
        if self._worker:
            self._worker.join(timeout=30)
        if self._conn:
            self._conn.close()
            self._conn = None

    # libvirt's event thread: only queue, never call libvirt from here
    def _lifecycle(self, conn, domain, event, detail, opaque):
        if event == self._started_event:
            self._queue.put("started")

    def _reboot(self, conn, domain, opaque):
        self._queue.put("reboot")

    def _note(self, text):
        self.log.append((round(time.monotonic() - self._started, 1), text))
        _LOG.info("%s: %s", self.name, text)

    def _work(self):
        libvirt = _libvirt()
        while True:
            item = self._queue.get()
            if item is None:
                return
            try:
                conn = libvirt.open(self.uri)
                try:
                    self.handle(conn.lookupByName(self.name), item, libvirt)
                finally:
                    conn.close()
            except libvirt.libvirtError as exc:
                self._note("failed on %s: %s" % (item, exc))

    def handle(self, domain, item, libvirt):
        """One event: ``started`` consumes the override, ``reboot`` boots again without it."""
        if item == "started":
            cleared = clear_boot_override(domain.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE))
            if cleared:
                domain.connect().defineXML(cleared)
                self._note("boot override consumed by this boot (cleared for the next one)")
        elif item == "reboot":
            self._note("guest rebooted: starting the machine again without the override")
            if domain.isActive():
                domain.destroy()
            domain.create()


_EVENT_LOOP = []


def _event_loop(libvirt):
    """libvirt's default event loop, once per process, in a daemon thread."""
    if _EVENT_LOOP:
        return
    libvirt.virEventRegisterDefaultImpl()

    def run():
        while True:
            libvirt.virEventRunDefaultImpl()

    thread = threading.Thread(target=run, name="libvirt-events", daemon=True)
    thread.start()
    _EVENT_LOOP.append(thread)


@dataclasses.dataclass
class RedfishMachine:
    """The lab machine as a libvirt domain behind sushy-emulator; ``with`` removes everything.

    ``folder`` holds the NVMe disk, the firmware variables, the console, the media pool, the
    emulator's config and log. ``pki`` is ``lab.bmc.pki.ensure_pki``'s dict (the emulator's
    certificate); ``media_ca`` the CA file the emulator trusts for virtual media downloads.
    """

    folder: str
    name: str
    uuid: str
    port: int
    pki: dict
    media_ca: str
    username: str = "admin"
    password: str = dataclasses.field(default="lab-password", repr=False)
    disk_mib: int = 256
    disk_serial: str = "GPUFLEET0001"
    uri: str = LIBVIRT_URI
    ssh_port: int = None          # the host port forwarded to the guest's sshd (None: no forward)
    forwards: tuple = ()          # more (host address, port) forwarded to that port in the guest
    secure_boot: bool = True      # False: the firmware without keys (Secure Boot off)

    def __post_init__(self):
        self.disk = os.path.join(self.folder, "nvme0.raw")
        self.nvram = os.path.join(self.folder, "OVMF_VARS.fd")
        self.console = os.path.join(self.folder, "console.log")
        self.pool = self.name + "-media"
        self.watcher = OnceWatcher(self.name, self.uri)
        self._proc = None
        self._log = None

    @property
    def baseuri(self):
        return "https://127.0.0.1:%d" % self.port

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self, timeout=60):
        libvirt = _libvirt()
        os.makedirs(os.path.join(self.folder, "media"), exist_ok=True)
        os.makedirs(os.path.join(self.folder, "tmp"), exist_ok=True)
        with open(self.disk, "wb") as handle:
            handle.truncate(self.disk_mib << 20)
        conn = libvirt.open(self.uri)
        try:
            _remove_domain(conn, self.name, libvirt)  # a leftover of a killed run
            conn.defineXML(domain_xml(self.name, self.uuid, self.disk, self.nvram, self.console,
                                      disk_serial=self.disk_serial, ssh_port=self.ssh_port,
                                      forwards=self.forwards, secure_boot=self.secure_boot))
            try:
                conn.storagePoolLookupByName(self.pool).destroy()
            except libvirt.libvirtError:
                pass
            conn.storagePoolCreateXML(pool_xml(self.pool, os.path.join(self.folder, "media")), 0)
        finally:
            conn.close()
        auth = lab_pki.write_htpasswd(os.path.join(self.folder, "htpasswd"), self.username, self.password)
        config = os.path.join(self.folder, "sushy.conf")
        with open(config, "w") as handle:
            handle.write(sushy_config(self.port, self.pki["server.pem"], self.pki["server.key"], auth, self.uuid,
                                      self.pool, self.media_ca, self.uri))
        self._log = open(os.path.join(self.folder, "sushy.log"), "wb")
        # TMPDIR: the emulator's media downloads land in this folder, removed with it
        env = dict(os.environ, TMPDIR=os.path.join(self.folder, "tmp"))
        self._proc = subprocess.Popen([sys.executable, "-m", "sushy_tools.emulator.main", "--config", config],
                                      stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, env=env)
        self.watcher.start()
        self._wait_ready(timeout)

    def _wait_ready(self, timeout):
        import requests
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise LabError("sushy-emulator exited (%s); see %s" % (self._proc.returncode, self.emulator_log()))
            try:
                requests.get(self.baseuri + "/redfish/v1", verify=self.pki["ca.pem"], timeout=2)
                return
            except requests.RequestException:
                time.sleep(0.5)
        raise LabError("sushy-emulator did not answer on %s within %d s" % (self.baseuri, timeout))

    def emulator_log(self):
        return read_text(os.path.join(self.folder, "sushy.log"))

    def console_text(self):
        return read_text(self.console)

    def is_active(self):
        libvirt = _libvirt()
        conn = libvirt.open(self.uri)
        try:
            return bool(conn.lookupByName(self.name).isActive())
        finally:
            conn.close()

    def stop(self):
        """Stop the emulator and the watcher; destroy and undefine the domain, its NVRAM and pool."""
        self.watcher.stop()
        if self._proc and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._log:
            self._log.close()
            self._log = None
        libvirt = _libvirt()
        conn = libvirt.open(self.uri)
        try:
            _remove_domain(conn, self.name, libvirt)
            try:
                conn.storagePoolLookupByName(self.pool).destroy()  # transient: gone once stopped
            except libvirt.libvirtError:
                pass
        finally:
            conn.close()


def _remove_domain(conn, name, libvirt):
    try:
        domain = conn.lookupByName(name)
    except libvirt.libvirtError:
        return
    if domain.isActive():
        domain.destroy()
    domain.undefineFlags(libvirt.VIR_DOMAIN_UNDEFINE_NVRAM)
