# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Artifact files: digests, reproducible rootfs tarballs, and what differs between two.

``normalize_rootfs`` rewrites the tar that ``docker export`` produced so that two
builds from the same inputs can be byte-identical: members sorted by name, owner
names dropped (numeric ids kept), mtimes clamped to SOURCE_DATE_EPOCH, gzip header
without name or time, and docker's own runtime files left out.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import gzip
import hashlib
import os
import tarfile

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import ManifestError

__all__ = ["DOCKER_RUNTIME_FILES", "diff_tar_indexes", "normalize_rootfs", "read_member", "sha256_file", "tar_index"]

# Files docker creates or bind-mounts in every container; not part of the image.
DOCKER_RUNTIME_FILES = (".dockerenv", "etc/hostname", "etc/hosts", "etc/resolv.conf")
CHUNK = 1024 * 1024


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _member_name(name):
    """Canonical member path: no leading "/" or "./", no trailing "/"."""
    while name.startswith("./") or name.startswith("/"):
        name = name[1:] if name.startswith("/") else name[2:]
    return name.rstrip("/") or "."


def _clean(member, epoch):
    member.name = _member_name(member.name)
    if member.islnk():
        member.linkname = _member_name(member.linkname)
    member.mtime = min(int(member.mtime), epoch)
    member.uname = ""
    member.gname = ""
    member.pax_headers = {}
    return member


def normalize_rootfs(src_tar, dest_tgz, source_date_epoch, compresslevel=6):
    """Rewrite ``src_tar`` into a deterministic ``dest_tgz``; return the member count."""
    try:
        source = tarfile.open(src_tar, "r:")
    except (IOError, OSError, tarfile.TarError) as exc:
        raise ManifestError("Cannot read the exported root filesystem %s: %s. Re-run the build." % (src_tar, exc))
    count = 0
    with source:
        members = sorted(source.getmembers(), key=lambda m: _member_name(m.name))
        tmp = dest_tgz + ".partial"
        with open(tmp, "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=compresslevel, mtime=0) as gz:
                with tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as out:
                    for member in members:
                        if _member_name(member.name) in DOCKER_RUNTIME_FILES:
                            continue
                        fileobj = source.extractfile(member) if member.isreg() else None
                        out.addfile(_clean(member, source_date_epoch), fileobj)
                        count += 1
        os.rename(tmp, dest_tgz)
    return count


def tar_index(path):
    """{member name: (type, mode, uid, gid, mtime, linkname, sha256-of-content)} of a tarball."""
    index = {}
    with tarfile.open(path, "r:*") as tar:
        for member in tar:
            digest = ""
            if member.isreg():
                handle = tar.extractfile(member)
                digest = hashlib.sha256(handle.read()).hexdigest()
            index[_member_name(member.name)] = (member.type.decode("ascii", "replace"), member.mode,
                                                member.uid, member.gid, member.mtime, member.linkname, digest)
    return index


def diff_tar_indexes(first, second, limit=200):
    """Paths that differ between two tar indexes, with the fields that differ."""
    fields = ("type", "mode", "uid", "gid", "mtime", "linkname", "content")
    diffs = []
    for name in sorted(set(first) | set(second)):
        a, b = first.get(name), second.get(name)
        if a == b:
            continue
        if a is None or b is None:
            diffs.append({"path": name, "differs": ["only in %s" % ("second" if a is None else "first")]})
        else:
            diffs.append({"path": name, "differs": [f for f, x, y in zip(fields, a, b) if x != y]})
    return {"count": len(diffs), "paths": diffs[:limit]}


def read_member(path, name):
    """Bytes of one member of a tarball (for reading /etc/gpufleet/image-release back)."""
    with tarfile.open(path, "r:*") as tar:
        for member in tar:
            if _member_name(member.name) == _member_name(name) and member.isreg():
                return tar.extractfile(member).read()
    raise ManifestError("Artifact %s has no file %s. Rebuild the image." % (path, name))
