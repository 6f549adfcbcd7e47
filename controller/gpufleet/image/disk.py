"""Assemble a whole-disk image from a root directory, with no loop device and no mount.

Layout (GPT, 512-byte sectors), what the deploy agent expects:

    1 gpufleet-esp   FAT32 EFI system partition (shim, GRUB, grub.cfg when the root has them)
    2 gpufleet-seed  1 MiB, raw: the per-node first-boot seed the agent writes
    3 gpufleet-root  ext4 built from the root directory (``mkfs.ext4 -d``), grown on the node

Why ``sgdisk`` + ``mkfs.ext4 -d`` + ``mtools`` rather than Packer's qemu builder: every step is
a file operation that runs unprivileged in CI without KVM, in seconds (a 2 GiB root in about
10 s), and the root filesystem is the very tree the pinned build produced, not a second install.
"""
import os
import shutil
import subprocess

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import ImageError

from gpufleet.deploy import gpt

__all__ = ["ESP_MIB", "SEED_MIB", "HOST_TOOLS", "esp_image", "assemble_disk"]

ESP_MIB = 64
SEED_MIB = 1
MIB = 1 << 20
HOST_TOOLS = ("sgdisk", "mkfs.ext4", "mkfs.vfat", "mcopy", "mmd")
_COPY = 8 << 20


def _run(run, argv, what):
    try:
        done = run(argv, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise ImageError("%s: %s did not run (%s); fix: apt install gdisk e2fsprogs dosfstools mtools"
                         % (what, argv[0], exc))
    if done.returncode != 0:
        raise ImageError("%s: %s exited %d: %s" % (what, argv[0], done.returncode,
                                                   (done.stderr or done.stdout).strip()[-600:]))


def _place(src, dest_fd, offset, limit):
    """Copy the file ``src`` into the disk at ``offset``; it must fit in ``limit`` bytes."""
    size = os.path.getsize(src)
    if size > limit:
        raise ImageError("%s (%d bytes) does not fit its partition (%d bytes)" % (src, size, limit))
    with open(src, "rb") as handle:
        done = 0
        while True:
            block = handle.read(_COPY)
            if not block:
                return
            os.pwrite(dest_fd, block, offset + done)
            done += len(block)


def esp_image(path, size_mib, esp_files, run=subprocess.run, fat=32, label="GPUFLEETESP"):
    """A FAT image (FAT32 unless ``fat`` says otherwise) holding ``esp_files`` ({path on the ESP:
    source file})."""
    _run(run, ["mkfs.vfat", "-F", str(fat), "-n", label, "-C", path, str(size_mib * 1024)], "ESP")
    made = set()
    for dest in sorted(esp_files):
        parts = dest.strip("/").split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if folder not in made:
                _run(run, ["mmd", "-i", path, "::/" + folder], "ESP folder")
                made.add(folder)
        _run(run, ["mcopy", "-i", path, esp_files[dest], "::/" + "/".join(parts)], "ESP file")


def assemble_disk(root_dir, out_path, size_mib, esp_files=None, work=None, run=subprocess.run):
    """Write the whole-disk image ``out_path`` of ``size_mib`` MiB; return its partitions."""
    if not os.path.isdir(root_dir):
        raise ImageError("root directory %s does not exist; fix: build the image version first" % root_dir)
    root_mib = size_mib - ESP_MIB - SEED_MIB - 2  # 1 MiB before the first partition, 1 for the backup GPT
    if root_mib < 16:
        raise ImageError("a %d MiB disk leaves no room for the root; fix: give at least %d MiB"
                         % (size_mib, ESP_MIB + SEED_MIB + 18))
    work = work or os.path.dirname(os.path.abspath(out_path))
    partial = out_path + ".part"
    with open(partial, "wb") as handle:
        handle.truncate(size_mib * MIB)
    _run(run, ["sgdisk", "--clear",
               "-n", "1:2048:+%dM" % ESP_MIB, "-t", "1:ef00", "-c", "1:gpufleet-esp",
               "-n", "2:0:+%dM" % SEED_MIB, "-t", "2:8300", "-c", "2:gpufleet-seed",
               "-n", "3:0:0", "-t", "3:8304", "-c", "3:gpufleet-root", partial], "partition table")
    with open(partial, "rb") as handle:
        parts = {p["name"]: p for p in gpt.partitions(handle.read(MIB))}
    esp_img = os.path.join(work, "esp.img")
    root_img = os.path.join(work, "root.img")
    for leftover in (esp_img, root_img):
        if os.path.exists(leftover):
            os.remove(leftover)
    try:
        esp_image(esp_img, ESP_MIB, esp_files or {}, run)
        root_kib = parts["gpufleet-root"]["size_bytes"] // 1024
        _run(run, ["mkfs.ext4", "-q", "-F", "-L", "gpufleet-root", "-d", root_dir, root_img, "%dk" % root_kib],
             "root filesystem")
        fd = os.open(partial, os.O_RDWR)
        try:
            _place(esp_img, fd, parts["gpufleet-esp"]["first_byte"], parts["gpufleet-esp"]["size_bytes"])
            _place(root_img, fd, parts["gpufleet-root"]["first_byte"], parts["gpufleet-root"]["size_bytes"])
            os.fsync(fd)
        finally:
            os.close(fd)
    finally:
        for scratch in (esp_img, root_img):
            if os.path.exists(scratch):
                os.remove(scratch)
    os.replace(partial, out_path)
    return sorted(parts.values(), key=lambda p: p["number"])


def check_host(which=shutil.which):
    missing = [tool for tool in HOST_TOOLS if not which(tool)]
    if missing:
        raise ImageError("assembling a whole-disk image needs %s; fix: apt install gdisk e2fsprogs "
                         "dosfstools mtools" % ", ".join(missing))
