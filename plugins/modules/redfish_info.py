#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.baremetal contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: redfish_info
short_description: Read system facts and the firmware inventory from Redfish BMCs
version_added: 0.1.0
description:
  - Reads one system (O(baseuri)) or many (O(nodes), concurrently), returning identity (manufacturer,
    model, serial, UUID), power state, health, boot settings, NIC MACs, processors including
    GPUs where the BMC exposes them, BMC/manager facts and the firmware inventory
    (C(UpdateService/FirmwareInventory)).
  - With V(logs) in O(gather_subset), also the newest O(log_entries) entries of the system's and
    its managers' logs (C(LogServices) -> C(Entries), that is the SEL and the BMC's event log), for a
    technician's break/fix record.
  - With V(tpm) in O(gather_subset), also the certificates the BMC reports for the server's TPM
    (C(Chassis) -> C(TrustedComponents) -> C(Certificates), Redfish 2022.2 and later), for
    example its endorsement key (EK) certificate. Few BMCs offer this; see
    C(docs/attestation-fleets.md) for the vendors and for reading the certificate on the node.
    Each certificate is parsed as X.509 with the Python library C(cryptography) on the controller.
  - With V(secure_boot) in O(gather_subset), also the system's UEFI Secure Boot state
    (C(Systems/<id>/SecureBoot)), which C(playbooks/tasks/secure_boot.yml) checks before a node
    joins, together with the firmware variables read on the node.
  - Never changes anything; RV(changed) is always false.
author:
  - gpufleet.baremetal maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.baremetal.redfish
  - gpufleet.baremetal.attributes
  - gpufleet.baremetal.attributes.INFO_MODULE
options:
  gather_subset:
    description:
      - Which facts to read. V(system) is always read.
    type: list
    elements: str
    default: [system, nics, processors, managers, firmware]
    choices: [system, nics, processors, managers, firmware, logs, tpm, secure_boot]
  log_entries:
    description:
      - How many log entries V(logs) returns, newest first (by C(Created)), across all the
        system's and managers' log services.
    type: int
    default: 50
notes:
  - A part the BMC does not implement (HTTP 404/405/501) is returned as null and named in
    RV(facts.unsupported); it is never reported as empty.
  - A BMC without log services returns no entries and says so in RV(facts.logs.notes); an
    entry that does not follow the Redfish schema (for example a C(Created) that is not a date)
    fails the node with the reason.
  - V(tpm) is fail-closed. A BMC without C(TrustedComponents) returns null (named in
    RV(facts.unsupported)). The node fails, naming the reason at the end of its message, when
    none of the trusted components is a TPM (V(no_tpm)), a TPM has no certificate
    (V(no_certificate)), a certificate is not PEM X.509 (V(bad_certificate)) or is PKCS7 or
    PKCS12 (V(unsupported_type)).
  - V(secure_boot) returns null (named in RV(facts.unsupported)) when the system has no
    C(SecureBoot) resource; a value outside the schema fails the node.
  - V(tpm) checks that each certificate is a PEM X.509 certificate, not who issued it. Verify
    the chain against the site's EK CA bundle before trusting it (C(gpufleet attest
    enroll-challenge --ek-cert)).
"""

EXAMPLES = r"""
- name: Read one server's facts
  gpufleet.baremetal.redfish_info:
    baseuri: bmc-r12-07.example.net
    username: "{{ bmc_user }}"
    password: "{{ bmc_password }}"
  delegate_to: localhost
  register: bmc

- name: Show the GPUs the BMC sees
  ansible.builtin.debug:
    msg: "{{ bmc.facts.gpus | map(attribute='model') | list }}"

- name: Firmware versions of a whole rack
  gpufleet.baremetal.redfish_info:
    nodes: "{{ rack42_bmcs }}"
    username: "{{ bmc_user }}"
    password: "{{ bmc_password }}"
    gather_subset: [firmware]
  delegate_to: localhost
  run_once: true

- name: The newest 20 SEL and BMC log entries for a break/fix ticket
  gpufleet.baremetal.redfish_info:
    baseuri: bmc-r12-07.example.net
    username: "{{ bmc_user }}"
    password: "{{ bmc_password }}"
    gather_subset: [system, logs]
    log_entries: 20
  delegate_to: localhost
  register: bmc_log

- name: The TPM's certificates as the BMC reports them (fails the node if none can be read)
  gpufleet.baremetal.redfish_info:
    baseuri: bmc-r12-07.example.net
    username: "{{ bmc_user }}"
    password: "{{ bmc_password }}"
    gather_subset: [system, tpm]
  delegate_to: localhost
  register: bmc_tpm

- name: The Secure Boot state the BMC reports
  gpufleet.baremetal.redfish_info:
    baseuri: bmc-r12-07.example.net
    username: "{{ bmc_user }}"
    password: "{{ bmc_password }}"
    gather_subset: [system, secure_boot]
  delegate_to: localhost
  register: bmc_sb

- name: Save the first certificate of the first TPM for enrollment
  ansible.builtin.copy:
    content: "{{ bmc_tpm.facts.tpm[0].certificates[0].pem }}"
    dest: "/var/lib/gpufleet/ek/{{ inventory_hostname }}.pem"
    mode: "0644"
  delegate_to: localhost
"""

RETURN = r"""
changed:
  description: Always false.
  returned: always
  type: bool
facts:
  description: Facts of the node (single node, O(baseuri) only).
  returned: when O(baseuri) is used and the node succeeded
  type: dict
  contains:
    system:
      description: Id, name, manufacturer, model, serial_number, sku, uuid, power_state,
        health, state, bios_version, boot (target, enabled, mode, allowed_targets),
        memory_gib and processor_count.
      type: dict
    nics:
      description: Ethernet interfaces (id, name, mac, link_status); null if not offered.
      type: list
      elements: dict
    processors:
      description: Processors (id, type, manufacturer, model, cores, threads, memory_mib,
        health); null if not offered.
      type: list
      elements: dict
    gpus:
      description: The processors whose type is C(GPU).
      type: list
      elements: dict
    managers:
      description: Managers of the system (id, model, manager_type, firmware_version, uuid,
        health).
      type: list
      elements: dict
    firmware:
      description: Firmware inventory (id, name, version, updateable, software_id, health),
        sorted by id; null without an UpdateService.
      type: list
      elements: dict
    logs:
      description: Log entries (only with V(logs) in O(gather_subset)).
      type: dict
      contains:
        entries:
          description: The newest entries, newest first; each with service
            (C(system:<id>) or C(manager:<manager>/<id>)), id, created, created_epoch,
            severity, message, message_id, entry_type, sensor_type and entry_code.
          type: list
          elements: dict
        notes:
          description: What could not be read (no C(LogServices), a service without
            C(Entries), a log longer than the pages read).
          type: list
          elements: str
        services:
          description: The log services read.
          type: list
          elements: str
      sample:
        entries: [{"service": "system:Log1", "id": "2", "created": "2012-03-07T14:45:00Z",
                   "severity": "Critical", "message": "Temperature threshold exceeded",
                   "message_id": "0x592E28", "entry_type": "SEL", "sensor_type": "Temperature"}]
        notes: []
        services: ["system:Log1", "manager:BMC/Log"]
    tpm:
      description:
        - The TPMs of the system's chassis (only with V(tpm) in O(gather_subset)); null when the
          BMC has no C(TrustedComponents).
        - Each has id, path, chassis, type (C(Discrete) or C(Integrated)), manufacturer, model,
          firmware_version, vendor_id (C(TPM.CapabilitiesVendorID)) and certificates.
        - Each certificate has id, path, certificate_type (C(PEM), C(PEMchain) or null),
          usage_types (C(CertificateUsageTypes), for example C(EK) or C(Device)), pem (the leaf),
          chain (the rest of a C(PEMchain)) and sha256 (of the leaf's DER, the same
          fingerprint the enrollment ledger keeps as C(ek_fingerprint)).
      type: list
      elements: dict
      sample:
        - {"id": "TPM", "type": "Discrete", "vendor_id": "SIM0",
           "certificates": [{"id": "EKCert", "certificate_type": "PEM", "usage_types": ["Device"],
                             "pem": "-----BEGIN CERTIFICATE-----\n...", "chain": [],
                             "sha256": "<64 hex>"}]}
    secure_boot:
      description:
        - The system's Secure Boot state (only with V(secure_boot) in O(gather_subset)); null
          when the BMC offers no C(SecureBoot) resource.
        - path, enable (C(SecureBootEnable)), current_boot (C(SecureBootCurrentBoot), C(Enabled)
          or C(Disabled)) and mode (C(SecureBootMode), C(SetupMode), C(UserMode), C(AuditMode)
          or C(DeployedMode)); an absent field is null.
      type: dict
      sample: {"path": "/redfish/v1/Systems/1/SecureBoot", "enable": true, "current_boot": "Enabled",
               "mode": "DeployedMode"}
    unsupported:
      description: Parts the BMC does not offer.
      type: list
      elements: str
  sample:
    system: {"id": "1", "manufacturer": "Contoso", "power_state": "On"}
    firmware: [{"id": "BMC", "version": "1.45.455b66-rev4"}]
nodes:
  description: One entry per node with C(name), C(changed), C(failed), C(error) and C(facts).
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
  sample: {"total": 8, "changed": 0, "failed": 0}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.argspec import module_kwargs
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.fanout import run_module
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.inventory import (
    CHOICES, SUBSETS, gather,
)


def main():
    module = AnsibleModule(**module_kwargs(
        gather_subset=dict(type="list", elements="str", default=list(SUBSETS),
                           choices=list(CHOICES)),
        log_entries=dict(type="int", default=50),
    ))
    subset = module.params["gather_subset"]
    if module.params["log_entries"] < 1:
        module.fail_json(msg="log_entries is %d; it must be 1 or more (how many of the newest log "
                             "entries to return)." % module.params["log_entries"])

    def operation(client, node):
        return dict(changed=False, facts=gather(client, node["system_id"], subset,
                                                module.params["log_entries"]))

    run_module(module, operation)


if __name__ == "__main__":
    main()
