# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The trusted public key options of the image modules, and their one loader.

image_verify and image_drift_info both verify a signed manifest against a trusted key given
as a file (``public_key``) or as text (``public_key_content``). Keep in step with
plugins/doc_fragments/image_key.py (the documentation of these options).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import (
    VerificationError,
)

__all__ = ["KEY_OPTIONS", "key_module_kwargs", "read_public_key"]

KEY_OPTIONS = ("public_key", "public_key_content")


def key_module_kwargs(**extra):
    """AnsibleModule keyword arguments: the module's ``extra`` options plus the key options."""
    spec = dict(public_key=dict(type="path"), public_key_content=dict(type="str"))
    spec.update(extra)
    return dict(argument_spec=spec, mutually_exclusive=[KEY_OPTIONS],
                required_one_of=[KEY_OPTIONS], supports_check_mode=True)


def read_public_key(params):
    """``(pem bytes, where)`` of the trusted key; VerificationError when the file is unreadable.

    ``where`` names the key in later errors (the file path, or ``public_key_content``).
    """
    if not params.get("public_key"):
        return params["public_key_content"].encode("utf-8"), "public_key_content"
    path = params["public_key"]
    try:
        with open(path, "rb") as handle:
            return handle.read(), path
    except (IOError, OSError) as exc:
        raise VerificationError(
            "Cannot read the public key %s: %s. Give a readable PEM file in public_key, or the "
            "key itself in public_key_content." % (path, exc.strerror or exc), public_key=path)
