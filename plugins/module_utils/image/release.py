# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""``/etc/gpufleet/image-release``: os-release style ``KEY="value"`` lines.

The file inside the image carries VERSION, BUILD_ID and PINS_SHA256; the signed
manifest carries the same three values. Attestation verifies the manifest signature,
then compares the node's file with ``expected_release(manifest)``.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import ManifestError

__all__ = ["RELEASE_PATH", "REQUIRED_KEYS", "parse_release", "release_mismatches"]

RELEASE_PATH = "/etc/gpufleet/image-release"
REQUIRED_KEYS = ("VERSION", "BUILD_ID", "PINS_SHA256")
LINE_RE = re.compile(r'^([A-Z][A-Z0-9_]*)=(?:"([^"\\]*)"|([^"\s]*))$')


def parse_release(text, where="image-release"):
    """Parse the file; every non-blank, non-comment line must be KEY=value or KEY="value"."""
    values = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = LINE_RE.match(line)
        if not match:
            raise ManifestError('%s line %d is not KEY="value": %r. The file is damaged; reimage the node.'
                                % (where, number, line), line=number)
        values[match.group(1)] = match.group(2) if match.group(2) is not None else match.group(3)
    missing = [k for k in REQUIRED_KEYS if k not in values]
    if missing:
        raise ManifestError("%s lacks %s. It was not written by a gpufleet image build; reimage the node."
                            % (where, ", ".join(missing)), missing=missing)
    return values


def release_mismatches(actual, expected):
    """[{key, expected, actual}] for every required key whose value differs."""
    return [{"key": key, "expected": expected.get(key), "actual": actual.get(key)}
            for key in REQUIRED_KEYS if actual.get(key) != expected.get(key)]
