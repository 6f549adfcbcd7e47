# -*- coding: utf-8 -*-
# Copyright: gpufleet.baremetal contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Connection and fan-out options shared by every redfish_* module.

Keep in step with plugins/module_utils/redfish/argspec.py (the matching argspec builder).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    DOCUMENTATION = r"""
options:
  baseuri:
    description:
      - Address of one BMC, as C(host), C(host:port) or C(https://host:port).
      - Without a scheme, C(https://) is used.
      - Exactly one of O(baseuri) and O(nodes) is required.
    type: str
  username:
    description:
      - BMC account name. Default for every entry of O(nodes) that has none.
    type: str
    aliases: [user]
  password:
    description:
      - BMC account password. Never logged or returned. Keep it in Ansible Vault.
      - Default for every entry of O(nodes) that has none.
    type: str
  auth:
    description:
      - V(session) logs in through the SessionService (C(X-Auth-Token)) and always logs out at
        the end, also on failure; after a C(401) in the middle of a run it logs in again once.
      - V(basic) sends HTTP basic authentication with every request.
      - V(auto) uses a session when the BMC offers a SessionService and basic auth otherwise.
    type: str
    default: auto
    choices: [auto, session, basic]
  validate_certs:
    description:
      - Verify the BMC's TLS certificate. Turn off only for a lab; prefer O(ca_path).
    type: bool
    default: true
  ca_path:
    description:
      - PEM file of the CA (or CA bundle) that signed the BMC certificates.
    type: path
  timeout:
    description:
      - Read timeout in seconds of one HTTP request (connect timeout is 5 seconds).
    type: int
    default: 10
  retries:
    description:
      - How many times one request is retried after a connection error, HTTP 429 or 5xx.
      - Waits grow exponentially from 0.5 seconds (capped at 30); a C(Retry-After) header
        from the BMC is honoured instead.
    type: int
    default: 3
  system_id:
    description:
      - Id (last path element), UUID or Name of the ComputerSystem on the BMC.
      - May be left out when the BMC has exactly one system.
      - Default for every entry of O(nodes) that has none.
    type: str
  nodes:
    description:
      - Act on many BMCs in one task, concurrently (see O(workers)).
      - Each entry has its own address, credentials, system id and CA; the top-level
        O(username), O(password), O(system_id), O(ca_path), O(validate_certs) and the other
        connection options are defaults.
    type: list
    elements: dict
    suboptions:
      name:
        description: Name of the node in results and errors. Defaults to O(nodes[].baseuri).
        type: str
      baseuri:
        description: Address of this node's BMC.
        type: str
        required: true
      username:
        description: BMC account name for this node.
        type: str
      password:
        description: BMC account password for this node.
        type: str
      system_id:
        description: System id for this node.
        type: str
      ca_path:
        description: PEM file of the CA that signed this node's BMC certificate.
        type: path
      validate_certs:
        description: Verify this node's BMC certificate. Turn off only for a lab.
        type: bool
  workers:
    description:
      - Most BMCs talked to at the same time when O(nodes) is given.
    type: int
    default: 50
  max_failed_percent:
    description:
      - The task fails when more than this percentage of O(nodes) failed.
      - V(0) (the default) fails the task on any failed node. Every node is attempted either
        way, and every node's outcome is in RV(nodes).
    type: float
    default: 0.0
requirements:
  - requests >= 2.31 (on the host that runs the module, usually the controller)
notes:
  - Run these modules on the controller (C(delegate_to=localhost) or a play on localhost).
    They talk to the BMC over HTTPS and never log in to the managed node.
  - Vendors differ in where VirtualMedia lives, which reset types and boot targets they
    allow, and whether a PATCH needs C(If-Match); the modules discover these per BMC.
seealso:
  - name: DMTF Redfish specification (DSP0266)
    description: The protocol these modules speak.
    link: https://www.dmtf.org/dsp/DSP0266
"""
