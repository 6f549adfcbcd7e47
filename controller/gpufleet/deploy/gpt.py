"""Read a GUID partition table from the bytes at the start of a disk image.

The agent needs two facts from the image it just wrote: where the seed partition starts and
which partition is the root to grow. Parsing the table from the image's own first MiB (UEFI
spec, section 5.3) avoids waiting for udev to create ``/dev/disk/by-partlabel`` links, which a
minimal ramdisk may not run. 512-byte logical sectors: the images are built that way.
"""
import struct

from gpufleet.deploy.errors import DeployError

__all__ = ["SECTOR", "partitions", "find"]

SECTOR = 512
_HEADER = struct.Struct("<8s4sII4xQQQQ16sQIII")
_ENTRY = struct.Struct("<16s16sQQQ72s")


def partitions(head):
    """[{number, name, first_byte, size_bytes}] of the GPT in ``head`` (the disk's first MiB)."""
    if len(head) < 2 * SECTOR:
        raise DeployError("partition table", "the image is too short to hold a GPT")
    (signature, _rev, _size, _crc, _cur, _backup, _first, _last, _guid,
     entries_lba, count, entry_size, _entries_crc) = _HEADER.unpack_from(head, SECTOR)
    if signature != b"EFI PART":
        raise DeployError("partition table", "the image has no GPT; fix: build the whole-disk "
                          "image with `gpufleet image build` (GPT, ESP, root)")
    found = []
    for index in range(min(count, 256)):
        offset = entries_lba * SECTOR + index * entry_size
        if offset + _ENTRY.size > len(head):
            break
        type_guid, _uniq, first, last, _attrs, name = _ENTRY.unpack_from(head, offset)
        if type_guid == b"\0" * 16:
            continue
        found.append({"number": index + 1, "name": name.decode("utf-16-le").rstrip("\0"),
                      "first_byte": first * SECTOR, "size_bytes": (last - first + 1) * SECTOR})
    return found


def find(head, name):
    """The partition labelled ``name``; DeployError when the image has none."""
    for part in partitions(head):
        if part["name"] == name:
            return part
    raise DeployError("partition table", "the image has no partition labelled %r; fix: build the "
                      "whole-disk image with `gpufleet image build`" % name)
