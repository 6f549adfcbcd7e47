# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Errors of the golden-image package: pins, Packer runs, manifests, signatures, drift."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError

__all__ = [
    "ImageError",
    "PinError",
    "PackerError",
    "ManifestError",
    "SignatureError",
    "VerificationError",
]


class ImageError(GpufleetError):
    """Base of every golden-image error."""


class PinError(ImageError):
    """A pin file is missing, malformed, or pins an incompatible stack."""


class PackerError(ImageError):
    """Packer is missing, rejects the template, or a build step failed."""


class ManifestError(ImageError):
    """A manifest, inventory or image-release is missing or malformed, or pins did not install."""


class SignatureError(ImageError):
    """A key cannot be loaded or generated, or signing failed."""


class VerificationError(ImageError):
    """An artifact is unsigned, altered, or signed by a different key: never image from it."""
