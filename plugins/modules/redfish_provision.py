#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.baremetal contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: redfish_provision
short_description: Boot servers for provisioning (virtual media, one-time boot, power) in one Redfish session
version_added: 0.2.0
description:
  - Runs, per node and in one BMC session, what the separate modules do one task each -
    M(gpufleet.baremetal.redfish_virtual_media) (insert O(image_url), when given),
    M(gpufleet.baremetal.redfish_boot) (the boot override) and
    M(gpufleet.baremetal.redfish_power) (O(power)) - on one system (O(baseuri)) or many
    (O(nodes), concurrently).
  - Sharing the session saves the login, service root, system lookup and logout that each
    separate task repeats - 12 requests per node instead of 21 against the lab BMCs, which
    makes a 1,000-node rack about 1.7x faster (see docs/benchmarks.md).
  - Every step is idempotent and behaves exactly as in its own module - media already
    inserted, boot settings already applied and a node already On send nothing.
  - Steps run in the order media, boot, power and stop at the first failure; the error names
    the failed step and the steps that had already changed the node.
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
      - Image the BMC inserts as virtual media before the boot override. No media step
        without it (network boot).
      - An V(http://) or V(https://) URL with a host; any other value (V(file://), V(ftp://),
        NFS/CIFS shares, empty, no host) is refused before any BMC is contacted.
    type: str
  media_type:
    description:
      - Kind of device for O(image_url), as in M(gpufleet.baremetal.redfish_virtual_media).
        By default V(usb) for C(.img)/C(.raw) URLs, else V(cd).
    type: str
    choices: [cd, usb, floppy]
  write_protected:
    description: Insert the media write-protected.
    type: bool
    default: true
  media_reinsert:
    description:
      - Eject every image inserted on the node first, O(image_url) too, then insert O(image_url),
        so the BMC sees a fresh insertion. For installers that run once per insertion (the
        lab's, some BMCs' virtual CD) when a run resumes after a crash with the media still in.
      - The media step is then always a change; without O(image_url) it does nothing.
    type: bool
    default: false
  boot_target:
    description: Boot device for the override (V(cd) for virtual media, V(pxe), V(uefi_http) for network boot).
    type: str
    required: true
    choices: [pxe, cd, hdd, uefi_http, bios_setup, none]
  boot_enabled:
    description: V(once) for the next boot only, V(continuous) until changed, V(disabled).
    type: str
    default: once
    choices: [once, continuous, disabled]
  boot_mode:
    description: Boot mode to set with the override; unchanged when not given.
    type: str
    choices: [uefi, legacy]
  power:
    description:
      - V(on) powers an Off node on (a node already On keeps running and the module warns
        that the new settings wait for its next boot).
      - V(restart), V(force_restart) and V(power_cycle) boot a running node into the new
        settings now (always a change). V(none) leaves the power alone.
    type: str
    default: "on"
    choices: ["on", restart, force_restart, power_cycle, none]
  wait:
    description:
      - Wait until the BMC reports the node On. Without waiting the power state is not read
        again after the reset (the C(state) of RV(power) is null); the BMC usually still shows the old
        state for seconds.
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait for the power state with O(wait=true).
    type: int
    default: 300
  poll_interval:
    description: Seconds between power state reads while waiting.
    type: float
    default: 2.0
notes:
  - One session per node covers all the steps; it is logged out even when a step fails.
  - A one-time override (O(boot_enabled=once)) is consumed by the boot it causes. A re-run
    after that boot arms it again for the next boot and, with O(power=on), warns that the
    node is already On. Whether a node still needs provisioning is the lifecycle's decision
    (M(gpufleet.baremetal.node_state)), not the BMC's.
"""

EXAMPLES = r"""
- name: Boot a rack from the signed installer ISO, once, and power it on
  gpufleet.baremetal.redfish_provision:
    nodes: "{{ rack42_bmcs }}"
    username: "{{ bmc_user }}"
    password: "{{ bmc_password }}"
    image_url: https://images.example.net/gpufleet-2026.09.1.iso
    boot_target: cd
    power: force_restart
    max_failed_percent: 5
  delegate_to: localhost
  run_once: true

- name: PXE boot one node once (no media), powering it on if it is off
  gpufleet.baremetal.redfish_provision:
    baseuri: bmc-r12-07.example.net
    username: "{{ bmc_user }}"
    password: "{{ bmc_password }}"
    boot_target: pxe
    boot_mode: uefi
  delegate_to: localhost
"""

RETURN = r"""
changed:
  description: Whether any step changed (or would change) any node.
  returned: always
  type: bool
media:
  description:
    - The media step as M(gpufleet.baremetal.redfish_virtual_media) reports it (C(changed),
      C(device), C(before), C(image), C(inserted)); null without O(image_url). Single node only.
    - With O(media_reinsert=true) also C(ejected), the devices whose image was ejected first.
  returned: when O(baseuri) is used and the node succeeded
  type: dict
  sample: {"changed": true, "device": "/redfish/v1/Systems/1/VirtualMedia/Cd", "before": null,
           "image": "https://images.example.net/gpufleet-2026.09.1.iso", "inserted": true}
boot:
  description:
    - The boot step as M(gpufleet.baremetal.redfish_boot) reports it (C(changed), C(before),
      C(requested), and C(applied), which is what the BMC shows after the change). Single node only.
  returned: when O(baseuri) is used and the node succeeded
  type: dict
  sample: {"changed": true, "before": {"target": "Hdd", "enabled": "Disabled", "mode": "UEFI"},
           "requested": {"target": "Cd", "enabled": "Once"},
           "applied": {"target": "Cd", "enabled": "Once", "mode": "UEFI"}}
power:
  description:
    - The power step (C(changed), C(before), C(state), C(reset_type)); null with
      O(power=none). C(state) is null unless O(wait=true). Single node only.
  returned: when O(baseuri) is used and the node succeeded
  type: dict
  sample: {"changed": true, "before": "Off", "state": null, "reset_type": "On"}
nodes:
  description: One entry per node with C(name), C(changed), C(failed), C(error), C(media),
    C(boot) and C(power).
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
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.boot import (
    ENABLED, MODES, TARGETS,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.fanout import run_module
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.provision import (
    POWER_ACTIONS, provision,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import RedfishError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.virtual_media import (
    MEDIA_TYPES, check_image_url,
)


def _diff(entry):
    """Per node: media image, boot override and power state, before and after."""
    media, boot, power = (entry.get(k) or {} for k in ("media", "boot", "power"))
    before = dict(image=media.get("before"), boot=boot.get("before"), power=power.get("before"))
    after = dict(image=media.get("image"), boot=boot.get("applied"),
                 power=power.get("state") or power.get("before"))
    return before, after


def main():
    module = AnsibleModule(**module_kwargs(
        image_url=dict(type="str"),
        media_type=dict(type="str", choices=sorted(MEDIA_TYPES)),
        write_protected=dict(type="bool", default=True),
        media_reinsert=dict(type="bool", default=False),
        boot_target=dict(type="str", required=True, choices=sorted(TARGETS)),
        boot_enabled=dict(type="str", default="once", choices=sorted(ENABLED)),
        boot_mode=dict(type="str", choices=sorted(MODES)),
        power=dict(type="str", default="on", choices=sorted(POWER_ACTIONS)),
        wait=dict(type="bool", default=False),
        wait_timeout=dict(type="int", default=300),
        poll_interval=dict(type="float", default=2.0),
    ))
    p = module.params
    if p["image_url"] is not None:
        try:
            check_image_url(p["image_url"])  # before any BMC is contacted
        except RedfishError as exc:
            module.fail_json(**exc.to_fail_kwargs())

    def operation(client, node):
        return provision(client, node["system_id"], p["boot_target"], image_url=p["image_url"],
                         media_type=p["media_type"], write_protected=p["write_protected"],
                         boot_enabled=p["boot_enabled"], boot_mode=p["boot_mode"],
                         power=p["power"], wait=p["wait"], timeout=p["wait_timeout"],
                         poll=p["poll_interval"], check_mode=module.check_mode,
                         media_reinsert=p["media_reinsert"])

    run_module(module, operation, diff_of=_diff)


if __name__ == "__main__":
    main()
