"""The whole-disk golden image of a built version: the same root filesystem, made bootable.

Input: a verified rootfs build (``gpufleet image build``'s ``manifest.json``, signature checked
first, fail closed). Output, in ``<build>/disk/``: ``<version>.disk.raw.gz``, its own
``manifest.json`` and ``manifest.json.sig``. The manifest repeats the rootfs build's pins,
packages, release, SBOM reference and build id; only the artifact and the provenance subject
differ, so the deploy agent, ``image_verify`` and ``gpufleet image verify`` check it unchanged.

What is added to the root: the first-boot unit that applies the installer's seed
(``gpufleet.deploy.firstboot``) and systemd-networkd enabled. The ESP gets Debian's signed shim
and GRUB (so Secure Boot can be on) and a ``grub.cfg`` that boots the root's kernel. The root must
carry them: the version's pins list the boot packages (``BOOT_PACKAGES``); an image without
them is refused, naming the missing files.
"""
import gzip
import hashlib
import os
import shutil
import subprocess

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import ImageError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.manifest import canonical_json, parse_manifest
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.verify import verify_image

from gpufleet import collection
from gpufleet.image import disk as disk_mod
from gpufleet.image import installer as installer_mod

__all__ = ["BOOT_PACKAGES", "SHIM", "GRUB", "FIRSTBOOT_UNIT", "boot_files", "grub_cfg", "add_firstboot",
           "disk_manifest", "build_disk"]

BOOT_PACKAGES = ("linux-image-cloud-amd64", "systemd-sysv", "openssh-server", "shim-signed",
                 "grub-efi-amd64-signed", "python3")
SHIM = "usr/lib/shim/shimx64.efi.signed"
GRUB = "usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed"
FIRSTBOOT_UNIT = """[Unit]
Description=gpufleet: apply the per-node seed (host name, SSH key, management address)
DefaultDependencies=no
After=local-fs.target
Before=network-pre.target systemd-networkd.service ssh.service
Wants=network-pre.target
ConditionPathExists=!/etc/gpufleet/seed-applied

[Service]
Type=oneshot
RemainAfterExit=yes
WorkingDirectory=/opt/gpufleet
ExecStart=/usr/bin/python3 -m gpufleet.deploy.firstboot

[Install]
WantedBy=sysinit.target
"""
_FIRSTBOOT_FILES = ("gpufleet/deploy/firstboot.py", "gpufleet/deploy/seed.py", "gpufleet/deploy/errors.py")


def _newest(root, pattern_prefix):
    boot = os.path.join(root, "boot")
    names = sorted(n for n in (os.listdir(boot) if os.path.isdir(boot) else ()) if n.startswith(pattern_prefix))
    return names[-1] if names else None


def grub_cfg(kernel, initrd):
    """GRUB's menu on the ESP: find the root by its label, boot its kernel with a serial console."""
    return ("set timeout=1\nset default=0\n"
            "search --no-floppy --label gpufleet-root --set root\n"
            "menuentry 'gpufleet' {\n"
            "  linux /boot/%s root=PARTLABEL=gpufleet-root ro console=tty0 console=ttyS0,115200\n"
            "  initrd /boot/%s\n}\n" % (kernel, initrd))


def boot_files(root, work):
    """{ESP path: source file} for shim, GRUB and grub.cfg; ImageError naming what is missing."""
    kernel, initrd = _newest(root, "vmlinuz-"), _newest(root, "initrd.img-")
    missing = [rel for rel in (SHIM, GRUB) if not os.path.isfile(os.path.join(root, rel))]
    missing += [] if kernel else ["boot/vmlinuz-*"]
    missing += [] if initrd else ["boot/initrd.img-*"]
    if missing:
        raise ImageError("the image's root has no %s: it cannot boot on its own; fix: add %s to the version's "
                         "pin file" % (", ".join(missing), ", ".join(BOOT_PACKAGES)))
    cfg = os.path.join(work, "grub.cfg")
    with open(cfg, "w") as handle:
        handle.write(grub_cfg(kernel, initrd))
    shim, grub = os.path.join(root, SHIM), os.path.join(root, GRUB)
    # shim as the removable-media path (no boot entry needed) and in Debian's own folder,
    # where the signed GRUB looks for its grub.cfg
    return {"EFI/BOOT/BOOTX64.EFI": shim, "EFI/BOOT/grubx64.efi": grub, "EFI/debian/shimx64.efi": shim,
            "EFI/debian/grubx64.efi": grub, "EFI/debian/grub.cfg": cfg, "EFI/BOOT/grub.cfg": cfg}


def _link(root, rel, target):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.lexists(path):
        os.remove(path)
    os.symlink(target, path)


_FSTAB = ("# gpufleet whole-disk image: the partitions by their GPT labels\n"
          "PARTLABEL=gpufleet-root  /          ext4  errors=remount-ro     0 1\n"
          "PARTLABEL=gpufleet-esp   /boot/efi  vfat  umask=0077,nofail     0 2\n")


# Debian's /etc/hosts (netbase). A root exported from a container build has none: the runtime
# bind-mounts its own there, and `docker export` leaves the mount point out.
_HOSTS = ("127.0.0.1\tlocalhost\n"
          "::1\t\tlocalhost ip6-localhost ip6-loopback\n"
          "ff02::1\t\tip6-allnodes\n"
          "ff02::2\t\tip6-allrouters\n")


def add_firstboot(root):
    """The first-boot unit, its code under /opt/gpufleet, systemd-networkd enabled, an fstab, and
    an /etc/hosts when the root has none (the node identity role edits it; it never creates it).

    SSH host keys baked in by the package's install are removed: one private key on every node
    would be a secret in the artifact. First boot makes each node its own (``ssh-keygen -A``).
    """
    for name in os.listdir(os.path.join(root, "etc", "ssh")) if os.path.isdir(os.path.join(root, "etc", "ssh")) else ():
        if name.startswith("ssh_host_"):
            os.remove(os.path.join(root, "etc", "ssh", name))
    os.makedirs(os.path.join(root, "etc"), exist_ok=True)
    with open(os.path.join(root, "etc", "fstab"), "w") as handle:
        handle.write(_FSTAB)
    hosts = os.path.join(root, "etc", "hosts")
    if not os.path.lexists(hosts):
        with open(hosts, "w") as handle:
            handle.write(_HOSTS)
    os.makedirs(os.path.join(root, "boot", "efi"), exist_ok=True)
    opt = os.path.join(root, "opt", "gpufleet")
    installer_mod.copy_agent(opt, collection.root(), files=_FIRSTBOOT_FILES,
                             collection_files=("plugins/module_utils/__init__.py", "plugins/module_utils/errors.py"))
    unit = os.path.join(root, "etc", "systemd", "system", "gpufleet-firstboot.service")
    os.makedirs(os.path.dirname(unit), exist_ok=True)
    with open(unit, "w") as handle:
        handle.write(FIRSTBOOT_UNIT)
    _link(root, "etc/systemd/system/sysinit.target.wants/gpufleet-firstboot.service",
          "/etc/systemd/system/gpufleet-firstboot.service")
    _link(root, "etc/systemd/system/multi-user.target.wants/systemd-networkd.service",
          "/lib/systemd/system/systemd-networkd.service")


def disk_manifest(rootfs_manifest, artifact, signer):
    """The disk artifact's manifest: the rootfs build's, with its artifact and provenance subject."""
    manifest = dict(rootfs_manifest)
    manifest["artifact"] = artifact
    manifest["signer"] = signer
    provenance = dict(manifest.get("provenance") or {})
    provenance["subject"] = [{"name": artifact["name"], "digest": {"sha256": artifact["sha256"]}}]
    manifest["provenance"] = provenance
    manifest["derived_from"] = {"name": rootfs_manifest["artifact"]["name"],
                                "sha256": rootfs_manifest["artifact"]["sha256"]}
    return manifest


def _gzip(src, dest):
    digest = hashlib.sha256()
    with open(src, "rb") as raw, open(dest + ".part", "wb") as out:
        with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=6, mtime=0) as packed:
            shutil.copyfileobj(raw, packed, 4 << 20)
    os.replace(dest + ".part", dest)
    with open(dest, "rb") as handle:
        for block in iter(lambda: handle.read(4 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build_disk(manifest_path, private_key, size_mib, work, run=subprocess.run):
    """Build ``<build>/disk/`` from the verified rootfs build at ``manifest_path``; return its summary."""
    disk_mod.check_host()
    public = signing.public_pem(private_key.public_key())
    summary = verify_image(manifest_path, public)        # fail closed: never build from an unverified root
    with open(manifest_path, "rb") as handle:
        rootfs_manifest = parse_manifest(handle.read(), manifest_path)
    shutil.rmtree(work, ignore_errors=True)
    try:
        out_dir = _build(rootfs_manifest, summary["artifact"], manifest_path, private_key, size_mib, work, run)
    finally:
        shutil.rmtree(work, ignore_errors=True)   # an unpacked root is GiBs; never leave it behind
    return verify_image(os.path.join(out_dir, "manifest.json"), public)


def _build(rootfs_manifest, rootfs_artifact, manifest_path, private_key, size_mib, work, run):
    root = os.path.join(work, "root")
    os.makedirs(root)
    done = run(["tar", "--numeric-owner", "-xpzf", rootfs_artifact, "-C", root],
               capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ImageError("unpacking %s failed: %s" % (rootfs_artifact, done.stderr.strip()[-400:]))
    esp = boot_files(root, work)
    add_firstboot(root)
    version = rootfs_manifest["version"]
    out_dir = os.path.join(os.path.dirname(os.path.abspath(manifest_path)), "disk")
    os.makedirs(out_dir, exist_ok=True)
    raw = os.path.join(work, "disk.raw")
    disk_mod.assemble_disk(root, raw, size_mib, esp_files=esp, work=work, run=run)
    name = "%s.disk.raw.gz" % version
    sha = _gzip(raw, os.path.join(out_dir, name))
    artifact = {"name": name, "sha256": sha, "size": os.path.getsize(os.path.join(out_dir, name)),
                "disk_bytes": os.path.getsize(raw), "media_type": "application/gzip"}
    signer = {"key_id": signing.key_id(private_key.public_key()),
              "algorithm": signing.algorithm_of(private_key.public_key())}
    data = canonical_json(disk_manifest(rootfs_manifest, artifact, signer))
    with open(os.path.join(out_dir, "manifest.json"), "wb") as handle:
        handle.write(data)
    with open(os.path.join(out_dir, "manifest.json.sig"), "wb") as handle:
        handle.write(signing.sign(private_key, data))
    return out_dir
