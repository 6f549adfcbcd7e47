# -*- coding: utf-8 -*-
# Copyright: gpufleet.baremetal contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The trusted public key options of the image modules (image_verify, image_drift_info).

Keep in step with plugins/module_utils/image/trusted_key.py (the matching argspec builder).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    DOCUMENTATION = r"""
options:
  public_key:
    description:
      - Path of the trusted PEM public key (Ed25519 or ECDSA P-256).
      - Exactly one of O(public_key) and O(public_key_content) is required.
    type: path
  public_key_content:
    description:
      - The trusted PEM public key itself.
      - Exactly one of O(public_key) and O(public_key_content) is required.
    type: str
requirements:
  - cryptography
"""
