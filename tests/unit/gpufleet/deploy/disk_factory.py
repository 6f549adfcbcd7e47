"""Small whole-disk images with a real GPT for the deploy agent's tests (no sgdisk, no loop)."""
import hashlib
import struct
import uuid
import zlib

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing
from lab.machine.rig import signed_disk_files

SECTOR = 512
LINUX = uuid.UUID("0fc63daf-8483-4772-8e79-3d69d8477de4").bytes_le
ESP = uuid.UUID("c12a7328-f81f-11d2-ba4b-00a0c93ec93b").bytes_le


def gpt_image(size=4 << 20, parts=(("gpufleet-esp", 2048, 2559, ESP), ("gpufleet-seed", 2560, 2567, LINUX),
                                   ("gpufleet-root", 2568, None, LINUX)), fill=b"root"):
    """A disk image of ``size`` bytes: protective MBR, primary GPT (CRCs right), data, backup GPT."""
    last_lba = size // SECTOR - 1
    entries = bytearray(128 * 128)
    for index, (name, first, last, type_guid) in enumerate(parts):
        last = last if last is not None else last_lba - 34
        struct.pack_into("<16s16sQQQ72s", entries, index * 128, type_guid, uuid.uuid4().bytes, first, last, 0,
                         name.encode("utf-16-le"))
    header = bytearray(struct.pack("<8s4sII4xQQQQ16sQIII", b"EFI PART", b"\0\0\1\0", 92, 0, 1, last_lba, 34,
                                   last_lba - 34, uuid.uuid4().bytes, 2, 128, 128, zlib.crc32(entries)))
    struct.pack_into("<I", header, 16, zlib.crc32(bytes(header)))
    image = bytearray(size)
    image[446:462] = struct.pack("<BBBBBBBBII", 0, 0, 2, 0, 0xEE, 0xFF, 0xFF, 0xFF, 1, min(last_lba, 0xFFFFFFFF))
    image[510:512] = b"\x55\xaa"
    image[SECTOR:SECTOR + len(header)] = header
    image[2 * SECTOR:2 * SECTOR + len(entries)] = entries
    root = 2568 * SECTOR
    pattern = hashlib.sha256(fill).digest()
    for offset in range(root, size - 34 * SECTOR, 4096):
        image[offset:offset + len(pattern)] = pattern
    return bytes(image)


def signed_disk(folder, image, key=None, version="2026.06.2", compress=False, name=None):
    """Write the artifact + manifest.json + .sig into ``folder``; return (files dict, key)."""
    key = key or signing.generate_key("ed25519")
    files = signed_disk_files(image, key, version=version, compress=compress, name=name, build_id="b-1",
                              pins_sha256="f" * 64)
    for fname, body in files.items():
        (folder / fname).write_bytes(body)
    return files, key
