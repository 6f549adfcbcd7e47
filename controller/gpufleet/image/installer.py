"""Build the installer ISO: Debian's kernel and a ramdisk that runs the deploy agent.

Everything comes from Debian packages (``debootstrap``) plus this project's agent code; the ISO
is made by ``grub-mkrescue`` (GRUB for UEFI and legacy BIOS on one hybrid image, with xorriso).
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

__all__ = ["PACKAGES", "AGENT_FILES", "rootfs_key", "grub_cfg", "copy_agent", "build_installer"]

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
# What the agent and /init run: python3 + cryptography (the agent), util-linux (lsblk),
# gdisk (sgdisk), cloud-guest-utils (growpart), e2fsprogs (resize2fs), efibootmgr, udev
# (by-path links, module loading), iproute2 + isc-dhcp-client (network), the cloud kernel.
PACKAGES = ("python3", "python3-cryptography", "python3-cffi-backend", "util-linux", "gdisk", "cloud-guest-utils", "e2fsprogs",
            "efibootmgr", "udev", "iproute2", "isc-dhcp-client", "linux-image-cloud-amd64")
HOST_TOOLS = ("debootstrap", "grub-mkrescue", "xorriso", "mformat", "cpio", "gzip")
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
         "var/lib/apt/lists", "boot")


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
    return {"grub-mkrescue": "grub-common grub-efi-amd64-bin grub-pc-bin", "mformat": "mtools"}.get(tool, tool)


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


def build_installer(out_iso, image_key_pem, collection_root, work, ca_pem=None, kernel_args=(),
                    run=subprocess.run, log=print):
    """Build ``out_iso``; return {iso, bytes, initrd_bytes, kernel, agent_files}."""
    check_host()
    os.makedirs(work, exist_ok=True)
    root = _rootfs(work, run, log)
    kernels = sorted(glob.glob(os.path.join(root, "boot", "vmlinuz-*")))
    if not kernels:
        raise InstallerBuildError("the root has no kernel in /boot; fix: keep linux-image-cloud-amd64 in PACKAGES")
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
    log("grub-mkrescue -> %s" % out_iso)
    _run(run, ["grub-mkrescue", "-o", out_iso + ".part", iso_tree], "make the ISO", timeout=600)
    os.replace(out_iso + ".part", out_iso)
    shutil.rmtree(root, ignore_errors=True)
    return {"iso": out_iso, "bytes": os.path.getsize(out_iso), "initrd_bytes": os.path.getsize(initrd),
            "kernel": os.path.basename(kernels[-1]), "agent_files": len(agent)}
