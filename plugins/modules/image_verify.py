#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.baremetal contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: image_verify
short_description: Verify a golden image's signed manifest and artifact before imaging
version_added: 0.1.0
description:
  - Checks that the image manifest carries a detached signature made by the trusted key,
    that the signature verifies over the manifest bytes, and that the artifact's size and
    sha256 match the manifest.
  - Refuses an unsigned, altered or wrong-key artifact with a clear error. Imaging must call
    this module first and use only what it returns.
  - Returns the values the node's C(/etc/gpufleet/image-release) must carry, for the acceptance
    gate's attestation phase.
author:
  - gpufleet.baremetal developers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.baremetal.image_key
  - gpufleet.baremetal.attributes
  - gpufleet.baremetal.attributes.INFO_MODULE
options:
  manifest:
    description: Path of the C(manifest.json) written by C(gpufleet image build).
    type: path
    required: true
  signature:
    description: Path of the detached signature. Defaults to O(manifest) plus C(.sig).
    type: path
  artifact:
    description: Path of the artifact. Defaults to the manifest's artifact name beside the manifest.
    type: path
  expected_version:
    description: Fail unless the manifest's image version is this one.
    type: str
notes:
  - Runs where the files are, normally the controller (with C(delegate_to) set to C(localhost)).
  - The same check is C(gpufleet image verify MANIFEST --public-key KEY) on the command line,
    and C(openssl pkeyutl -verify -pubin -inkey KEY -rawin -in manifest.json -sigfile manifest.json.sig)
    for Ed25519 keys.
"""

EXAMPLES = r"""
- name: Verify the image before any node is imaged from it
  gpufleet.baremetal.image_verify:
    manifest: build/images/2026.03.1/manifest.json
    public_key: /etc/gpufleet/keys/image-signing.pub
    expected_version: "2026.03.1"
  delegate_to: localhost
  run_once: true
  register: gpufleet_image

- name: Show what attestation will expect on the node
  ansible.builtin.debug:
    var: gpufleet_image.release
"""

RETURN = r"""
version:
  description: Image version from the verified manifest.
  returned: success
  type: str
  sample: "2026.03.1"
build_id:
  description: Build id; the node's image-release must carry the same C(BUILD_ID).
  returned: success
  type: str
  sample: lab-docker-1e4dc37da22d
pins_sha256:
  description: sha256 of the pin file the image was built from.
  returned: success
  type: str
artifact:
  description: Path of the verified artifact.
  returned: success
  type: str
artifact_sha256:
  description: sha256 of the verified artifact (equal to the signed manifest's).
  returned: success
  type: str
key_id:
  description: sha256 of the signer's DER public key (SubjectPublicKeyInfo).
  returned: success
  type: str
release:
  description: The C(/etc/gpufleet/image-release) values a node running this image must carry.
  returned: success
  type: dict
  sample: {"VERSION": "lab", "BUILD_ID": "lab-docker-1e4dc37da22d", "PINS_SHA256": "f71b..."}
manifest:
  description: Path of the verified manifest.
  returned: success
  type: str
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.signing import HAS_CRYPTOGRAPHY
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.trusted_key import (
    key_module_kwargs, read_public_key,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.verify import verify_image


def argument_spec():
    return dict(
        manifest=dict(type="path", required=True),
        signature=dict(type="path"),
        artifact=dict(type="path"),
        expected_version=dict(type="str"),
    )


def main():
    module = AnsibleModule(**key_module_kwargs(**argument_spec()))
    if not HAS_CRYPTOGRAPHY:
        module.fail_json(msg=missing_required_lib("cryptography"))
    params = module.params
    try:
        pem, where = read_public_key(params)
        summary = verify_image(params["manifest"], pem, params["signature"], params["artifact"],
                               params["expected_version"], where)
    except GpufleetError as exc:
        module.fail_json(**exc.to_fail_kwargs())
    module.exit_json(changed=False, **summary)


if __name__ == "__main__":
    main()
