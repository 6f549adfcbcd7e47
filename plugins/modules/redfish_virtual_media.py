#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.baremetal contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: redfish_virtual_media
short_description: Insert or eject a virtual media image through the Redfish BMC
version_added: 0.1.0
description:
  - Inserts an image URL into a virtual media device of one system (O(baseuri)) or many
    (O(nodes), concurrently), or ejects it.
  - Finds VirtualMedia under the ComputerSystem or, failing that, under its Managers, and
    chooses a device that accepts the media type (a free one first).
  - Idempotent, nothing is sent when the image is already inserted (V(present)) or no device
    holds it (V(absent)). A device holding another image is ejected first.
author:
  - gpufleet.baremetal maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.baremetal.redfish
  - gpufleet.baremetal.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  image_url:
    description:
      - URL the BMC fetches the image from; V(http://) or V(https://) with a host. Required for
        O(state=present). Any other URL (V(file://), V(ftp://), NFS/CIFS shares, empty, no host)
        is refused before any BMC is contacted.
      - With O(state=absent) only a device holding this image is ejected; without it every
        inserted image is ejected.
    type: str
  state:
    description: V(present) inserts, V(absent) ejects.
    type: str
    default: present
    choices: [present, absent]
  media_type:
    description:
      - Kind of device to use. V(cd) matches C(CD) and C(DVD) devices, V(usb) C(USBStick),
        V(floppy) C(Floppy). By default V(usb) for C(.img)/C(.raw) URLs, else V(cd).
    type: str
    choices: [cd, usb, floppy]
  write_protected:
    description: Insert the media write-protected.
    type: bool
    default: true
notes:
  - BMCs without an C(InsertMedia) action (Redfish before 2017.3, Lenovo SD530) get a PATCH
    of C(Image) and C(Inserted) instead.
"""

EXAMPLES = r"""
- name: Insert the signed installer ISO
  gpufleet.baremetal.redfish_virtual_media:
    baseuri: bmc-r12-07.example.net
    username: "{{ bmc_user }}"
    password: "{{ bmc_password }}"
    image_url: https://images.example.net/gpufleet-2026.06.2.iso
  delegate_to: localhost

- name: Eject everything from a rack
  gpufleet.baremetal.redfish_virtual_media:
    nodes: "{{ rack42_bmcs }}"
    username: "{{ bmc_user }}"
    password: "{{ bmc_password }}"
    state: absent
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
changed:
  description: Whether any node's media was (or would be) changed.
  returned: always
  type: bool
device:
  description: Path of the device used (single node, V(present) only).
  returned: when O(baseuri) is used with O(state=present) and the node succeeded
  type: str
  sample: /redfish/v1/Systems/1/VirtualMedia/Cd
image:
  description: Image the device reports at the end (null after eject; single node only).
  returned: when O(baseuri) is used and the node succeeded
  type: str
inserted:
  description: Whether the device reports media inserted at the end (single node only).
  returned: when O(baseuri) is used and the node succeeded
  type: bool
ejected:
  description: Devices ejected (single node, V(absent) only).
  returned: when O(baseuri) is used with O(state=absent) and the node succeeded
  type: list
  elements: str
nodes:
  description: One entry per node with C(name), C(changed), C(failed), C(error) and the
    fields above.
  returned: always
  type: list
  elements: dict
failed_nodes:
  description: Names of the nodes that failed.
  returned: always
  type: list
  elements: str
summary:
  description: Counts of nodes in total, changed and failed.
  returned: always
  type: dict
  sample: {"total": 8, "changed": 8, "failed": 0}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.argspec import module_kwargs
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.fanout import run_module
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import RedfishError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.virtual_media import (
    MEDIA_TYPES, check_image_url, eject_media, insert_media,
)


def main():
    kwargs = module_kwargs(
        image_url=dict(type="str"),
        state=dict(type="str", default="present", choices=["present", "absent"]),
        media_type=dict(type="str", choices=sorted(MEDIA_TYPES)),
        write_protected=dict(type="bool", default=True),
    )
    kwargs["required_if"] = [["state", "present", ["image_url"]]]
    module = AnsibleModule(**kwargs)
    p = module.params
    if p["state"] == "present":
        try:
            check_image_url(p["image_url"])  # before any BMC is contacted
        except RedfishError as exc:
            module.fail_json(**exc.to_fail_kwargs())

    def operation(client, node):
        if p["state"] == "absent":
            return eject_media(client, node["system_id"], p["image_url"], module.check_mode)
        return insert_media(client, node["system_id"], p["image_url"], p["media_type"],
                            p["write_protected"], module.check_mode)

    run_module(module, operation, diff_of=lambda e: ({"image": e.get("before")}, {"image": e.get("image")}))


if __name__ == "__main__":
    main()
