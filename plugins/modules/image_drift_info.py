#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.baremetal contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: image_drift_info
short_description: Compare a running node's packages and image-release with its signed image manifest
version_added: 0.1.0
description:
  - Verifies the signature of the image manifest with the trusted key, then compares what a node
    reports (its C(dpkg-query) package list, its C(/etc/gpufleet/image-release), its held packages)
    with the manifest of the image the node was built from.
  - Reports packages added, removed or at another version, image-release values that differ, and
    pinned packages that are no longer held. Read-only; always returns C(changed=false).
author:
  - gpufleet.baremetal developers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.baremetal.image_key
  - gpufleet.baremetal.attributes
  - gpufleet.baremetal.attributes.INFO_MODULE
options:
  manifest:
    description: Path of the image's C(manifest.json) (on the host running the module, normally the controller).
    type: path
    required: true
  signature:
    description: Path of the manifest's detached signature. Defaults to O(manifest) plus C(.sig).
    type: path
  packages:
    description:
      - The node's package list as printed by
        C(dpkg-query -W -f='${binary:Package}\t${Version}\t${Architecture}\t${db:Status-Status}\n').
      - The fourth (status) column is optional; with it, only C(installed) packages count.
    type: str
    required: true
  release:
    description: Content of the node's C(/etc/gpufleet/image-release).
    type: str
    required: true
  held:
    description: Packages C(apt-mark showhold) lists on the node. Omit to skip the hold check.
    type: list
    elements: str
  node:
    description: Name of the node, echoed in the result and in errors.
    type: str
    default: node
"""

EXAMPLES = r"""
- name: Compare this node with its image manifest
  gpufleet.baremetal.image_drift_info:
    manifest: "build/images/{{ node_release.VERSION }}/manifest.json"
    public_key: build/keys/lab-signing.pub
    packages: "{{ node_packages.stdout }}"
    release: "{{ node_release_text }}"
    held: "{{ node_held.stdout_lines }}"
    node: "{{ inventory_hostname }}"
  delegate_to: localhost
  register: node_drift
"""

RETURN = r"""
node:
  description: The node name given in O(node).
  returned: success
  type: str
drifted:
  description: True when anything differs from the manifest.
  returned: success
  type: bool
count:
  description: Number of differences.
  returned: success
  type: int
version:
  description: Image version of the manifest compared against.
  returned: success
  type: str
build_id:
  description: Build id of the manifest compared against.
  returned: success
  type: str
packages:
  description: Package differences, each a list of entries.
  returned: success
  type: dict
  contains:
    added:
      description: Packages on the node that the image does not have.
      type: list
      elements: dict
      returned: success
    removed:
      description: Image packages missing on the node.
      type: list
      elements: dict
      returned: success
    changed:
      description: Packages at another version than in the image.
      type: list
      elements: dict
      returned: success
release:
  description: image-release keys whose value differs (key, expected, actual).
  returned: success
  type: list
  elements: dict
unheld_pins:
  description: Pinned packages that are no longer held (empty when O(held) is omitted).
  returned: success
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.drift import check_node
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.signing import HAS_CRYPTOGRAPHY
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.trusted_key import (
    key_module_kwargs, read_public_key,
)


def argument_spec():
    return dict(
        manifest=dict(type="path", required=True),
        signature=dict(type="path"),
        packages=dict(type="str", required=True),
        release=dict(type="str", required=True),
        held=dict(type="list", elements="str"),
        node=dict(type="str", default="node"),
    )


def main():
    module = AnsibleModule(**key_module_kwargs(**argument_spec()))
    if not HAS_CRYPTOGRAPHY:
        module.fail_json(msg=missing_required_lib("cryptography"))
    params = module.params
    try:
        pem, where = read_public_key(params)
        report = check_node(params["manifest"], params["signature"], pem, where, params["packages"],
                            params["release"], params["held"], params["node"])
    except GpufleetError as exc:
        module.fail_json(**exc.to_fail_kwargs())
    module.exit_json(changed=False, node=params["node"], **report)


if __name__ == "__main__":
    main()
