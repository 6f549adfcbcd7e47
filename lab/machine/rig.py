"""The lab machine's imaging rig: what bring-up's imaging step needs around one virtual machine.

On this host, for the task file bringup.yml images with (playbooks/tasks/image_media.yml):
- the disk image: a built version's golden whole-disk image (``golden=``: `gpufleet image disk`'s
  folder, signed by the build's key), or a stand-in whose ESP holds Debian's signed shim and
  GRUB (from the installer's build) with a menu that prints one line and powers off (a LAB
  SIMULATION of a golden image's boot: it proves the firmware booted the disk through the
  agent's boot entry, Secure Boot enforcing, in a minute instead of the golden image's several
  under a software CPU), signed like a real disk image with a fresh key;
- an HTTPS artifact server (the installer ISO for the BMC, the disk image for the installer);
- the deploy service (`gpufleet deploy serve`'s code) and an installer ISO that asks it for its
  order by the machine's SMBIOS UUID;
- the machine behind its Redfish BMC (lab/machine/bmc.py).
``settings()`` are the inventory variables a real rack would set for the installer path.
Used by `make demo-machine` (lab/machine/demo.py) and tests/integration/machine.
"""
import gzip
import hashlib
import json
import os
import uuid as uuid_mod

import gpufleet  # noqa: F401  (installs the collection loader)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.manifest import SCHEMA, canonical_json
from gpufleet.deploy.callbacks import DeployService, InstallBook
from gpufleet.image import disk as disk_mod
from gpufleet.image import installer as installer_mod
from lab.bmc.pki import ensure_pki
from lab.machine.qemu import HOST_FROM_GUEST
from lab.machine.serve import ArtifactServer, free_port

__all__ = ["DISK_BOOTED", "stand_in_disk", "signed_disk_files", "sign_disk", "libvirtd_ready", "MachineRig"]

DISK_BOOTED = "gpufleet-lab-disk: booted from the NVMe disk"
VERSION = "machine-lab"
ROOT_SERIAL = "GPUFLEET0001"   # the NVMe serial lab/machine/domain.py gives the machine's disk


def stand_in_disk(folder, efi, size_mib=96):
    """A GPT disk image (ESP, seed, ext4 root) whose boot loader prints DISK_BOOTED. -> its path.
    ``efi``: build_installer's {"shimx64.efi": path, "grubx64.efi": path} (Debian's signed images:
    Secure Boot refuses anything else). The signed GRUB reads grub.cfg from \\EFI\\debian."""
    cfg = os.path.join(folder, "disk-grub.cfg")
    with open(cfg, "w") as handle:
        handle.write('echo "%s"\nsleep 1\nhalt\n' % DISK_BOOTED)
    root = os.path.join(folder, "disk-root")
    os.makedirs(os.path.join(root, "etc", "gpufleet"), exist_ok=True)
    with open(os.path.join(root, "etc", "gpufleet", "image-release"), "w") as handle:
        handle.write('VERSION="%s"\n' % VERSION)
    path = os.path.join(folder, "stand-in.disk.raw")
    disk_mod.assemble_disk(root, path, size_mib, esp_files={"EFI/debian/shimx64.efi": efi["shimx64.efi"],
                                                            "EFI/debian/grubx64.efi": efi["grubx64.efi"],
                                                            "EFI/debian/grub.cfg": cfg})
    return path


def signed_disk_files(image, key, version=VERSION, compress=True, name=None, build_id="lab-stand-in",
                      pins_sha256="0" * 64):
    """A disk image's artifact (gzipped or raw) + manifest.json + manifest.json.sig signed by ``key``.
    -> {file name: bytes}, the artifact first."""
    data = gzip.compress(image, mtime=0) if compress else image
    name = name or "%s.disk.raw%s" % (version, ".gz" if compress else "")
    manifest = {
        "schema": SCHEMA, "version": version, "build_id": build_id, "pins_sha256": pins_sha256,
        "artifact": {"name": name, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data),
                     "disk_bytes": len(image)},
        "signer": {"key_id": signing.key_id(key.public_key()), "algorithm": "ed25519"},
        "release": {"VERSION": version}, "packages": [],
    }
    body = canonical_json(manifest)
    return {name: data, "manifest.json": body, "manifest.json.sig": signing.sign(key, body)}


def sign_disk(folder, raw_path, key, version=VERSION):
    """Write the signed, gzipped disk into ``folder``. -> the artifact's name."""
    with open(raw_path, "rb") as handle:
        files = signed_disk_files(handle.read(), key, version)
    for fname, content in files.items():
        with open(os.path.join(folder, fname), "wb") as handle:
            handle.write(content)
    return next(iter(files))


def libvirtd_ready():
    """'' when libvirt-python reaches qemu:///system, else why not (for a skip or an error line)."""
    try:
        import libvirt
    except ImportError:
        return "libvirt-python is missing (the lab's extra; scripts/bootstrap-host.sh)"
    try:
        libvirt.open("qemu:///system").close()
    except libvirt.libvirtError as exc:
        return "libvirtd is not reachable (%s); start it: virtlogd -d; libvirtd -d" % str(exc).splitlines()[0]
    return ""


class MachineRig:
    """Start with ``with MachineRig(base, collection_root, ssh_key) as rig``; everything stops on exit."""

    def __init__(self, base, collection_root, ssh_public_key, domain="gpufleet-lab-machine1", log=print,
                 golden=None, disk_mib=256, forwards=()):
        """``golden``: {"folder": the disk build's folder, "public_key": its signer's public key (PEM
        path)}; the machine then gets a disk of ``disk_mib``, an SSH forward (``ssh_port``) and
        ``forwards``: (host address, port) pairs forwarded to the same port in the guest."""
        self.base, self.root, self.ssh_key, self.domain, self.log = base, collection_root, ssh_public_key, domain, log
        self.golden, self.disk_mib, self.forwards = golden, disk_mib, tuple(forwards)
        self.ssh_port = None
        self.served = os.path.join(base, "srv")
        self.state_dir = os.path.join(base, "deploy")
        self.service_log = []
        self.server = self.service = self.vm = None

    def __enter__(self):
        from lab.machine.bmc import RedfishMachine   # libvirt-python: only where a machine runs
        os.makedirs(self.served, exist_ok=True)
        try:
            key = None
            if self.golden:
                public_pem, self.artifact, self.version = self._serve_golden()
                self.ssh_port = free_port()
            else:
                key = signing.generate_key("ed25519")
                public_pem = signing.public_pem(key.public_key())
            self.pki = ensure_pki(os.path.join(self.base, "pki"), [HOST_FROM_GUEST, "127.0.0.1"])
            self.port = free_port()
            self.server = ArtifactServer(self.served, self.port, self.pki["server.pem"], self.pki["server.key"])
            self.book = InstallBook(self.state_dir)
            self.service = DeployService(self.book, "127.0.0.1", free_port(), self.pki["server.pem"],
                                         self.pki["server.key"], log=self.service_log.append)
            iso = os.path.join(self.root, "build", "installer", "lab-machine-installer.iso")
            self.log("installer: building %s (the ramdisk's root is cached under build/installer/work)" % iso)
            built = installer_mod.build_installer(
                iso, public_pem, self.root,
                os.path.join(self.root, "build", "installer", "work"), ca_pem=open(self.pki["ca.pem"], "rb").read(),
                kernel_args=["gpufleet.config_base=https://%s:%d/orders/" % (HOST_FROM_GUEST, self.service.port)],
                log=self.log)
            if key is not None:
                self.log("disk: a stand-in whole-disk image (the installer's signed shim and GRUB), signed "
                         "with a fresh image key")
                self.artifact, self.version = sign_disk(self.served, stand_in_disk(self.base, built["efi"]),
                                                        key), VERSION
            self._serve(iso, "installer.iso")
            self.key_file = os.path.join(self.base, "controller.pub")
            with open(self.key_file, "w") as handle:
                handle.write(self.ssh_key + "\n")
            self.log("machine: %s behind a Redfish BMC (sushy-tools' libvirt driver)" % self.domain)
            self.vm = RedfishMachine(os.path.join(self.base, "redfish-vm"), self.domain, str(uuid_mod.uuid4()),
                                     free_port(), self.pki, media_ca=self.pki["ca.pem"], disk_mib=self.disk_mib,
                                     ssh_port=self.ssh_port, forwards=self.forwards).__enter__()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _serve(self, path, name):
        """Hard-link ``path`` into the served folder as ``name`` (a rebuilt file never changes what
        a running download reads)."""
        target = os.path.join(self.served, name)
        if os.path.exists(target):
            os.unlink(target)
        os.link(path, target)

    def _serve_golden(self):
        """Link the golden disk's artifact, manifest and signature into the served folder."""
        folder = self.golden["folder"]
        with open(os.path.join(folder, "manifest.json")) as handle:
            manifest = json.load(handle)
        with open(self.golden["public_key"], "rb") as handle:
            public_pem = handle.read()
        name = manifest["artifact"]["name"]
        self.log("disk: the golden image %s (version %s, build %s)" % (name, manifest["version"],
                                                                       manifest["build_id"]))
        for fname in (name, "manifest.json", "manifest.json.sig"):
            self._serve(os.path.join(folder, fname), fname)
        return public_pem, name, manifest["version"]

    def __exit__(self, *exc):
        if self.vm is not None:
            self.vm.__exit__(*exc)
        for part in (self.service, self.server):
            if part is not None:
                part.stop()

    def settings(self, install_timeout=1800):
        """The installer path's inventory variables (docs/deploy.md, "Bring-up with the installer");
        with the golden disk also what playbooks/tasks/image.yml verifies before imaging."""
        settings = {
            "gpufleet_installer_url": "https://127.0.0.1:%d/installer.iso" % self.port,
            "gpufleet_disk_image_url": "https://%s:%d/%s" % (HOST_FROM_GUEST, self.port, self.artifact),
            "gpufleet_image_version": self.version,
            "gpufleet_deploy_state_dir": self.state_dir,
            "gpufleet_deploy_callback_url": "https://%s:%d" % (HOST_FROM_GUEST, self.service.port),
            "gpufleet_root_device": {"serial": ROOT_SERIAL},
            "gpufleet_seed_ssh_key_file": self.key_file,
            "gpufleet_seed_address": "10.0.2.15/24", "gpufleet_seed_gateway": HOST_FROM_GUEST,
            "gpufleet_install_timeout": install_timeout,
        }
        if self.golden:
            settings.update(gpufleet_image_manifest=os.path.join(self.served, "manifest.json"),
                            gpufleet_image_public_key=self.golden["public_key"])
        return settings

    def inventory(self, path, settings, node="machine1", ssh_private_key_file=None):
        """Write a one-host inventory (0600: it holds the BMC password) for ``settings``. -> path.

        With the golden disk the node is reached over SSH (root, the seed's key) through the
        machine's forwarded port; else everything runs on this host (the stand-in has no sshd)."""
        if self.ssh_port:
            reach = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": self.ssh_port,
                     "ansible_user": "root", "ansible_ssh_private_key_file": ssh_private_key_file,
                     "ansible_python_interpreter": "/usr/bin/python3",
                     # a fresh machine has fresh host keys on a reused loopback port
                     "ansible_ssh_common_args": "-o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no"}
        else:
            reach = {"ansible_connection": "local"}
        host = dict(settings, **reach, gpufleet_bmc_address=self.vm.baseuri,
                    gpufleet_bmc_username=self.vm.username, gpufleet_bmc_password=self.vm.password,
                    gpufleet_bmc_system_id=self.vm.uuid, gpufleet_bmc_ca_path=self.pki["ca.pem"])
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump({"all": {"hosts": {node: host}}}, handle)
        return path
