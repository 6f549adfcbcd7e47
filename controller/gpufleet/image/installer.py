"""Build the installer ISO: Debian's kernel and a ramdisk that runs the deploy agent.

Everything comes from Debian packages (``debootstrap``) plus this project's agent code. The ISO
(xorriso, the hybrid layout ``grub-mkrescue`` makes) boots under UEFI Secure Boot: its EFI boot
image holds Debian's signed shim as ``EFI/BOOT/BOOTX64.EFI`` and Debian's signed GRUB for CDs
(``gcdx64.efi.signed``) as ``EFI/BOOT/grubx64.efi``, which shim verifies, and which then checks
the signed Debian kernel through shim. Those binaries are taken from the debootstrapped root
(``shim-signed``, ``grub-efi-amd64-signed``), never built here: an unsigned GRUB (what
``grub-mkrescue`` puts in) is refused by a firmware that enforces Secure Boot. Legacy BIOS boots
the same ``grub.cfg`` through an El Torito image ``grub-mkimage`` makes from grub-pc-bin.
Why a full minimal Debian as the ramdisk rather than a busybox one: the agent is Python and
verifies signatures with ``cryptography``; Debian's packages bring both, with their security
updates, and ``debootstrap`` is already what the lab's base image is built with. The cost is
size (see ``docs/deploy.md`` for the measured numbers).

The CA certificate and the image signer's public key are baked in (``/etc/gpufleet/``): the
installer trusts nothing else. No secret is: the per-node token comes with the node's config.
"""
import glob
import hashlib
import os
import shutil
import subprocess

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import ImageError as InstallerBuildError
from gpufleet.image import disk as disk_mod

__all__ = ["PACKAGES", "AGENT_FILES", "SIGNED", "EFI_IMAGE_FILES", "rootfs_key", "grub_cfg", "copy_agent",
           "signed_files", "xorriso_argv", "build_installer"]

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
# What the agent and /init run: python3 + cryptography (the agent), util-linux (lsblk),
# gdisk (sgdisk), cloud-guest-utils (growpart), e2fsprogs (resize2fs), efibootmgr, udev
# (by-path links, module loading), iproute2 + isc-dhcp-client (network), the cloud kernel
# (Debian signs it), and the signed boot loaders the ISO's EFI image carries (copied out of the
# root, then trimmed from the ramdisk).
PACKAGES = ("python3", "python3-cryptography", "python3-cffi-backend", "util-linux", "gdisk", "cloud-guest-utils", "e2fsprogs",
            "efibootmgr", "udev", "iproute2", "isc-dhcp-client", "linux-image-cloud-amd64", "shim-signed",
            "grub-efi-amd64-signed")
HOST_TOOLS = ("debootstrap", "grub-mkimage", "xorriso", "mkfs.vfat", "mmd", "mcopy", "cpio", "gzip")
# {name in the build's efi folder: (path in the root, the Debian package that ships it)}
SIGNED = {"shimx64.efi": ("usr/lib/shim/shimx64.efi.signed", "shim-signed"),
          "gcdx64.efi": ("usr/lib/grub/x86_64-efi-signed/gcdx64.efi.signed", "grub-efi-amd64-signed"),
          "grubx64.efi": ("usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed", "grub-efi-amd64-signed")}
# The ISO's EFI boot image: shim at the removable-media path, the CD GRUB beside it (shim loads
# grubx64.efi from its own folder).
EFI_IMAGE_FILES = {"EFI/BOOT/BOOTX64.EFI": "shimx64.efi", "EFI/BOOT/grubx64.efi": "gcdx64.efi"}
BIOS_GRUB = "/usr/lib/grub/i386-pc"
# Embedded in the BIOS El Torito image: enough to read the ISO and boot the menu's entry.
BIOS_MODULES = ("biosdisk", "iso9660", "part_msdos", "normal", "configfile", "linux", "echo", "test", "search")
_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(_HERE))  # the folder holding the gpufleet package
# The agent's code, copied as files: gpufleet.deploy and the collection's image verification.
# The package's own __init__ installs Ansible's collection loader, which the ramdisk has no use
# for: there the collection's files sit on the path as plain packages, so it gets an empty one.
AGENT_FILES = ("gpufleet/deploy/*.py",)
_RAMDISK_INIT = '"""gpufleet outside the controller: only the deploy agent and first boot (gpufleet.deploy)."""\n'
COLLECTION_FILES = ("plugins/module_utils/__init__.py", "plugins/module_utils/errors.py",
                    "plugins/module_utils/image/*.py")
# Trimmed from the ramdisk: documentation, translations, the kernel image itself (it boots
# from the ISO), and apt's caches.
_TRIM = ("usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale", "var/cache/apt",
         "var/lib/apt/lists", "boot", "usr/lib/grub", "usr/lib/shim")


def rootfs_key(packages=PACKAGES, suite=SUITE):
    """A cache key for the debootstrapped root: the same packages reuse the same tree."""
    return hashlib.sha256(("%s\n%s" % (suite, "\n".join(sorted(packages)))).encode()).hexdigest()[:16]


def grub_cfg(kernel_args):
    """GRUB's menu: one entry, serial and screen console, no wait."""
    args = " ".join(["console=tty0", "console=ttyS0,115200", "panic=30"] + list(kernel_args))
    return ("set timeout=0\nset default=0\n"
            "menuentry 'gpufleet installer' {\n"
            "  linux /boot/vmlinuz %s\n  initrd /boot/initrd.img\n}\n" % args)


def _run(run, argv, what, **kw):
    try:
        done = run(argv, capture_output=True, text=True, check=False, **kw)
    except OSError as exc:
        raise InstallerBuildError("%s: %s did not run (%s); fix: install it (apt install %s)"
                                  % (what, argv[0], exc, _apt_name(argv[0])))
    if done.returncode != 0:
        raise InstallerBuildError("%s: %s exited %d: %s" % (what, " ".join(argv[:3]), done.returncode,
                                                            (done.stderr or done.stdout).strip()[-800:]))
    return done


def _apt_name(tool):
    return {"grub-mkimage": "grub-common grub-pc-bin", "mmd": "mtools", "mcopy": "mtools",
            "mkfs.vfat": "dosfstools"}.get(tool, tool)


def check_host(which=shutil.which):
    """Every host tool the build needs, or an error naming the missing ones and the fix."""
    missing = [tool for tool in HOST_TOOLS if not which(tool)]
    if missing:
        raise InstallerBuildError("the installer build needs %s; fix: apt install %s"
                                  % (", ".join(missing), " ".join(_apt_name(t) for t in missing)))


def _copy_tree_files(patterns, src_root, dest_root):
    copied = []
    for pattern in patterns:
        matches = sorted(glob.glob(os.path.join(src_root, pattern)))
        if not matches:
            raise InstallerBuildError("the agent's file %s is missing under %s" % (pattern, src_root))
        for path in matches:
            rel = os.path.relpath(path, src_root)
            dest = os.path.join(dest_root, rel)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copy2(path, dest)
            copied.append(rel)
    return copied


def copy_agent(dest, collection_root, files=AGENT_FILES, collection_files=COLLECTION_FILES):
    """The agent's code as plain packages under ``dest`` (a ramdisk's or an image's /opt/gpufleet)."""
    copied = _copy_tree_files(files, _PACKAGE_ROOT, dest)
    with open(os.path.join(dest, "gpufleet", "__init__.py"), "w") as handle:
        handle.write(_RAMDISK_INIT)
    return copied + _copy_tree_files(collection_files, collection_root,
                                     os.path.join(dest, "ansible_collections", "gpufleet", "baremetal"))


def _rootfs(work, run, log):
    """The debootstrapped tree, built once per package list (cached as a tarball)."""
    key = rootfs_key()
    cached = os.path.join(work, "rootfs-%s.tar" % key)
    root = os.path.join(work, "root")
    shutil.rmtree(root, ignore_errors=True)
    if not os.path.isfile(cached):
        log("debootstrap %s with %d packages (once; cached as %s)" % (SUITE, len(PACKAGES), cached))
        tmp = root + ".bootstrap"
        shutil.rmtree(tmp, ignore_errors=True)
        _run(run, ["debootstrap", "--variant=minbase", "--include=" + ",".join(PACKAGES), SUITE, tmp, MIRROR],
             "debootstrap", timeout=1800)
        _run(run, ["tar", "-C", tmp, "-cf", cached + ".part", "."], "cache the root")
        os.replace(cached + ".part", cached)
        shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(root)
    _run(run, ["tar", "-C", root, "-xf", cached], "unpack the cached root")
    return root


def signed_files(root, dest):
    """Copy Debian's signed shim and GRUB images out of the debootstrapped ``root`` into ``dest``.
    -> {name: path}; InstallerBuildError naming the package of any file that is missing."""
    missing = ["%s (package %s)" % (rel, package) for rel, package in SIGNED.values()
               if not os.path.isfile(os.path.join(root, rel))]
    if missing:
        raise InstallerBuildError("the installer's root lacks the signed boot files %s; fix: keep those "
                                  "packages in PACKAGES (the ISO cannot boot under Secure Boot without them)"
                                  % ", ".join(missing))
    os.makedirs(dest, exist_ok=True)
    copied = {}
    for name, (rel, _) in SIGNED.items():
        copied[name] = os.path.join(dest, name)
        shutil.copy2(os.path.join(root, rel), copied[name])
    return copied


def xorriso_argv(out_iso, iso_tree, efi_image_rel, bios_image_rel):
    """The hybrid ISO grub-mkrescue would make (El Torito BIOS + EFI, the EFI image also as a GPT
    partition for USB sticks), with our EFI image instead of its unsigned GRUB."""
    return ["xorriso", "-as", "mkisofs", "-graft-points", "-r", "-J", "-joliet-long", "-V", "GPUFLEET_INSTALLER",
            "-b", bios_image_rel, "-no-emul-boot", "-boot-load-size", "4", "-boot-info-table", "--grub2-boot-info",
            "--grub2-mbr", os.path.join(BIOS_GRUB, "boot_hybrid.img"),
            "--efi-boot", efi_image_rel, "-efi-boot-part", "--efi-boot-image", "--protective-msdos-label",
            "-o", out_iso, iso_tree]


def _boot_images(iso_tree, efi, run):
    """The EFI boot image (FAT: shim + the signed CD GRUB) and the BIOS El Torito image, in the tree."""
    efi_image = os.path.join(iso_tree, "efi.img")
    # FAT12: small enough for an El Torito image, and what grub-mkrescue makes too
    disk_mod.esp_image(efi_image, 8, dict((dest, efi[name]) for dest, name in EFI_IMAGE_FILES.items()), run,
                       fat=12, label="GPUFLEETEFI")
    # the same files in the ISO's own tree, for firmware that reads EFI/BOOT from ISO 9660
    for dest, name in EFI_IMAGE_FILES.items():
        os.makedirs(os.path.join(iso_tree, os.path.dirname(dest)), exist_ok=True)
        shutil.copy2(efi[name], os.path.join(iso_tree, dest))
    bios_dir = os.path.join(iso_tree, "boot", "grub", "i386-pc")
    os.makedirs(bios_dir, exist_ok=True)
    _run(run, ["grub-mkimage", "-O", "i386-pc-eltorito", "-d", BIOS_GRUB, "-p", "/boot/grub",
               "-o", os.path.join(bios_dir, "eltorito.img")] + list(BIOS_MODULES), "the BIOS boot image")
    # Debian's CD GRUB finds the ISO by this file and then reads /boot/grub/grub.cfg there
    os.makedirs(os.path.join(iso_tree, ".disk"))
    with open(os.path.join(iso_tree, ".disk", "info"), "w") as handle:
        handle.write("gpufleet installer\n")
    return "efi.img", "boot/grub/i386-pc/eltorito.img"


def build_installer(out_iso, image_key_pem, collection_root, work, ca_pem=None, kernel_args=(),
                    run=subprocess.run, log=print):
    """Build ``out_iso``; return {iso, bytes, initrd_bytes, kernel, agent_files, efi}.
    ``efi`` is {name: path} of the signed shim and GRUB images, kept under ``work``/efi."""
    check_host()
    os.makedirs(work, exist_ok=True)
    root = _rootfs(work, run, log)
    kernels = sorted(glob.glob(os.path.join(root, "boot", "vmlinuz-*")))
    if not kernels:
        raise InstallerBuildError("the root has no kernel in /boot; fix: keep linux-image-cloud-amd64 in PACKAGES")
    efi = signed_files(root, os.path.join(work, "efi"))
    iso_tree = os.path.join(work, "iso")
    shutil.rmtree(iso_tree, ignore_errors=True)
    os.makedirs(os.path.join(iso_tree, "boot", "grub"))
    shutil.copy2(kernels[-1], os.path.join(iso_tree, "boot", "vmlinuz"))
    agent = copy_agent(os.path.join(root, "opt", "gpufleet"), collection_root)
    trust = os.path.join(root, "etc", "gpufleet")
    os.makedirs(trust, exist_ok=True)
    with open(os.path.join(trust, "image-signing.pub"), "wb") as handle:
        handle.write(image_key_pem)
    if ca_pem:
        with open(os.path.join(trust, "ca.pem"), "wb") as handle:
            handle.write(ca_pem)
    init = os.path.join(root, "init")
    shutil.copy2(os.path.join(_HERE, "installer_init.sh"), init)
    os.chmod(init, 0o755)
    for rel in _TRIM:
        shutil.rmtree(os.path.join(root, rel), ignore_errors=True)
    initrd = os.path.join(iso_tree, "boot", "initrd.img")
    log("packing the ramdisk")
    _run(run, ["sh", "-c", "cd %s && find . | cpio -o -H newc --quiet | gzip -1 > %s" % (root, initrd)],
         "pack the ramdisk")
    with open(os.path.join(iso_tree, "boot", "grub", "grub.cfg"), "w") as handle:
        handle.write(grub_cfg(kernel_args))
    efi_rel, bios_rel = _boot_images(iso_tree, efi, run)
    log("xorriso -> %s (EFI: signed shim + GRUB; BIOS: GRUB El Torito)" % out_iso)
    _run(run, xorriso_argv(out_iso + ".part", iso_tree, efi_rel, bios_rel), "make the ISO", timeout=600)
    os.replace(out_iso + ".part", out_iso)
    shutil.rmtree(root, ignore_errors=True)
    return {"iso": out_iso, "bytes": os.path.getsize(out_iso), "initrd_bytes": os.path.getsize(initrd),
            "kernel": os.path.basename(kernels[-1]), "agent_files": len(agent), "efi": efi}
