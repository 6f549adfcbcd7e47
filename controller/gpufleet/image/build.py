# -*- coding: utf-8 -*-
# Part of the gpufleet controller package (controller/gpufleet); never shipped in the collection.
"""One image build: pins -> packer build -> reproducible artifact -> manifest, SBOM, signature.

``ImageBuilder.build`` is what ``gpufleet image build`` and ``make image-lab`` run.
A build whose inputs (templates, scripts, pin file, base image) did not change and
whose output still verifies is reused instead of rebuilt.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import shutil
import time

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import artifact as artifact_mod
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import inventory, signing
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import ImageError, ManifestError, PackerError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.manifest import build_manifest, canonical_json
from gpufleet.image.packer_output import parse_line
from gpufleet.image.pins import render_pkrvars
from gpufleet.image.provenance import provenance_statement
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.release import parse_release
from gpufleet.image.sbom import spdx_document
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.verify import verify_image

__all__ = ["BUILDER_ID", "ImageBuilder", "artifact_name", "input_files", "inputs_digest"]

BUILDER_ID = "https://gpufleet.invalid/builders/gpufleet-image-packer"
MANIFEST = "manifest.json"
SBOM = "sbom.spdx.json"


def artifact_name(version, builder, qemu_format="qcow2"):
    return "%s.rootfs.tar.gz" % version if builder == "docker" else "%s.disk.%s" % (version, qemu_format)


def input_files(template_dir, pin_path):
    """Every file that shapes the image: templates, provisioning scripts, cloud-init seed, pin file."""
    files = []
    for sub in ("", "scripts", "http"):
        folder = os.path.join(template_dir, sub)
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and (sub or name.endswith(".pkr.hcl")):
                files.append(path)
    return files + [pin_path]


def inputs_digest(template_dir, pin_path, extra=None):
    """([{uri, sha256}], combined sha256): the resolved dependencies of a build."""
    root = os.path.dirname(os.path.abspath(template_dir))
    entries = [{"uri": "file:" + os.path.relpath(os.path.abspath(p), root), "sha256": artifact_mod.sha256_file(p)}
               for p in input_files(template_dir, pin_path)]
    entries.extend(extra or [])
    combined = hashlib.sha256("".join("%s\0%s\n" % (e["uri"], e["sha256"]) for e in entries).encode("utf-8"))
    return entries, combined.hexdigest()


class ImageBuilder(object):
    """Builds one version with one builder into ``out_dir``."""

    def __init__(self, packer, pins, builder, out_dir, private_key, progress=None, clock=time.time,
                 base_image_id=None):
        self.packer = packer
        self.pins = pins
        self.builder = builder
        self.out_dir = os.path.abspath(out_dir)
        # Builds happen in a staging folder; only a verified result replaces out_dir, so a
        # failed build never destroys the last good image.
        self.work_dir = self.out_dir + ".partial"
        self.private_key = private_key
        self.progress = progress or (lambda text: None)
        self.clock = clock
        self.base_image_id = base_image_id
        extra = []
        if base_image_id:
            extra.append({"uri": "docker-image:" + pins.data["base_image"], "sha256": base_image_id.split(":")[-1]})
        self.inputs, digest = inputs_digest(packer.template_dir, pins.path, extra)
        self.build_id = "%s-%s-%s" % (pins.version, builder, digest[:12])
        self.timings = {}

    def _path(self, *parts):
        return os.path.join(self.work_dir, *parts)

    def reusable(self):
        """The summary of an existing verified build with the same build id, else None."""
        manifest = os.path.join(self.out_dir, MANIFEST)
        if not os.path.isfile(manifest):
            return None
        public = signing.public_pem(self.private_key.public_key())
        try:
            summary = verify_image(manifest, public)
        except ImageError:
            return None
        return summary if summary["build_id"] == self.build_id else None

    def _timed(self, name, func, *args):
        start = self.clock()
        result = func(*args)
        self.timings[name] = round(self.clock() - start, 1)
        return result

    def _prepare(self):
        if os.path.isdir(self.work_dir):
            shutil.rmtree(self.work_dir)
        os.makedirs(self.work_dir)
        var_file = self._path("packer-vars.pkrvars.json")
        with open(var_file, "wb") as handle:
            handle.write(canonical_json(render_pkrvars(self.pins, self.build_id, self.work_dir)))
        return var_file

    def _run_packer(self, var_file):
        self.packer.ensure_plugin(self.builder)
        variables = {"container_name": "gpufleet-image-build-%s-%d" % (self.pins.version, os.getpid())}
        self.packer.validate(self.builder, var_file, variables)
        with open(self._path("build.log"), "w") as log:
            def on_line(line):
                log.write(line + "\n")
                parsed = parse_line(line)
                if parsed is not None and parsed.kind == "ui" and parsed.data[:1] in (["say"], ["message"]):
                    self.progress(parsed.text())
            try:
                self.packer.build(self.builder, var_file, variables, on_line)
            except PackerError as exc:
                raise PackerError("%s\nFull log: %s" % (exc.msg, self._path("build.log")), **exc.details)

    def _make_artifact(self):
        name = artifact_name(self.pins.version, self.builder)
        dest = self._path(name)
        if self.builder == "docker":
            raw = self._path("rootfs.tar")
            artifact_mod.normalize_rootfs(raw, dest, self.pins.source_date_epoch())
            os.remove(raw)
        else:
            shutil.move(self._path("qemu", "disk.qcow2"), dest)
        return {"name": name, "sha256": artifact_mod.sha256_file(dest), "size": os.path.getsize(dest),
                "media_type": "application/gzip" if self.builder == "docker" else "application/octet-stream"}

    def _read_inventory(self):
        def read(name):
            path = self._path("inventory", name)
            if not os.path.isfile(path):
                raise ManifestError("The build did not hand back %s (expected %s). See %s."
                                    % (name, path, self._path("build.log")))
            with open(path) as handle:
                return handle.read()
        packages = inventory.parse_packages(read("packages.tsv"), "image package list")
        kernels = [k for k in read("kernels.txt").splitlines() if k.strip()]
        release = parse_release(read("image-release"), "image-release of the build")
        return packages, kernels, release

    def _check_pins(self, packages, release):
        mismatches = inventory.pin_mismatches(self.pins.packages, packages)
        if mismatches:
            raise ManifestError("Image %s does not contain its pins: %s. The build is rejected; fix the pin file."
                                % (self.build_id, json.dumps(mismatches)), mismatches=mismatches)
        if release.get("BUILD_ID") != self.build_id or release.get("PINS_SHA256") != self.pins.sha256:
            raise ManifestError("image-release inside %s carries BUILD_ID %s / PINS_SHA256 %s, expected %s / %s."
                                % (self.build_id, release.get("BUILD_ID"), release.get("PINS_SHA256"),
                                   self.build_id, self.pins.sha256))

    def _write_outputs(self, art, packages, kernels, release, started):
        data = self.pins.data
        sbom = canonical_json(spdx_document(self.pins.version, self.build_id, art["name"], packages,
                                            data["os"]["id"], data["os"]["version_id"], self.pins.source_date_epoch()))
        with open(self._path(SBOM), "wb") as handle:
            handle.write(sbom)
        sbom_ref = {"name": SBOM, "format": "SPDX-2.3", "sha256": hashlib.sha256(sbom).hexdigest()}
        build = {"build_id": self.build_id, "builder": self.builder, "version": self.pins.version,
                 "started": started, "finished": self.clock(),
                 "packer_version": ".".join(str(p) for p in self.packer.version())}
        statement = provenance_statement(art, build, self.inputs, BUILDER_ID)
        public = self.private_key.public_key()
        signer = {"key_id": signing.key_id(public), "algorithm": signing.algorithm_of(public)}
        manifest = canonical_json(build_manifest(self.pins, build, art, packages, kernels, release, sbom_ref,
                                                 statement, signer))
        with open(self._path(MANIFEST), "wb") as handle:
            handle.write(manifest)
        with open(self._path(MANIFEST + ".sig"), "wb") as handle:
            handle.write(signing.sign(self.private_key, manifest))

    def build(self, force=False):
        """Build (or reuse) and return the verified summary plus ``reused`` and ``timings``."""
        if not force:
            summary = self.reusable()
            if summary is not None:
                summary.update(reused=True, timings={})
                return summary
        started = self.clock()
        var_file = self._prepare()
        self._timed("packer_build_s", self._run_packer, var_file)
        art = self._timed("artifact_s", self._make_artifact)
        packages, kernels, release = self._read_inventory()
        self._check_pins(packages, release)
        self._timed("manifest_sign_s", self._write_outputs, art, packages, kernels, release, started)
        public = signing.public_pem(self.private_key.public_key())
        verify_image(self._path(MANIFEST), public)
        if os.path.isdir(self.out_dir):
            shutil.rmtree(self.out_dir)
        os.rename(self.work_dir, self.out_dir)
        summary = verify_image(os.path.join(self.out_dir, MANIFEST), public)
        summary.update(reused=False, timings=dict(self.timings, total_s=round(self.clock() - started, 1)))
        return summary
