# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""System facts: identity, power, health, boot, NIC MACs, processors (GPUs too), managers.

Resources the BMC does not implement (404/405/501) give ``None`` and are listed in
``unsupported``; a consumer that needs them (attestation) treats ``None`` as a failure.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import discovery
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.boot import current_boot
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.firmware import (
    firmware_inventory,
)

__all__ = ["SUBSETS", "gather", "system_facts", "nic_facts", "processor_facts", "manager_facts"]

SUBSETS = ("system", "nics", "processors", "managers", "firmware")


def system_facts(system):
    status = system.get("Status") or {}
    boot = system.get("Boot") or {}
    return dict(
        id=system.get("Id"), name=system.get("Name"), manufacturer=system.get("Manufacturer"),
        model=system.get("Model"), serial_number=system.get("SerialNumber"),
        sku=system.get("SKU"), uuid=system.get("UUID"), power_state=system.get("PowerState"),
        health=status.get("HealthRollup") or status.get("HealthRollUp") or status.get("Health"),
        state=status.get("State"), bios_version=system.get("BiosVersion"),
        boot=dict(current_boot(system), allowed_targets=boot.get(
            "BootSourceOverrideTarget@Redfish.AllowableValues")),
        memory_gib=(system.get("MemorySummary") or {}).get("TotalSystemMemoryGiB"),
        processor_count=(system.get("ProcessorSummary") or {}).get("Count"),
    )


def _collection(client, resource, key):
    """Member resources of ``resource[key]``, or None when the BMC lacks the collection."""
    path = discovery.link(resource, key)
    if not path or discovery.optional(client, path) is None:
        return None
    return [client.get(p) for p in discovery.members(client, path)]


def nic_facts(client, system):
    nics = _collection(client, system, "EthernetInterfaces")
    if nics is None:
        return None
    return [dict(id=n.get("Id"), name=n.get("Name"),
                 mac=n.get("PermanentMACAddress") or n.get("MACAddress"),
                 link_status=n.get("LinkStatus")) for n in nics]


def processor_facts(client, system):
    procs = _collection(client, system, "Processors")
    if procs is None:
        return None
    return [dict(id=p.get("Id"), type=p.get("ProcessorType"), manufacturer=p.get("Manufacturer"),
                 model=p.get("Model"), cores=p.get("TotalCores"), threads=p.get("TotalThreads"),
                 memory_mib=(p.get("MemorySummary") or {}).get("TotalMemorySizeMiB"),
                 health=(p.get("Status") or {}).get("Health")) for p in procs]


def manager_facts(client, system_path):
    result = []
    for path in discovery.managers_of(client, system_path):
        mgr = discovery.optional(client, path)
        if mgr is not None:
            result.append(dict(id=mgr.get("Id"), model=mgr.get("Model"),
                               manager_type=mgr.get("ManagerType"),
                               firmware_version=mgr.get("FirmwareVersion"),
                               uuid=mgr.get("UUID"),
                               health=(mgr.get("Status") or {}).get("Health")))
    return result


def gather(client, system_id=None, subset=SUBSETS):
    """Facts for the subsets asked; ``unsupported`` lists what the BMC does not offer."""
    path = discovery.find_system(client, system_id)
    system = client.get(path)
    facts = dict(system=system_facts(system))
    if "nics" in subset:
        facts["nics"] = nic_facts(client, system)
    if "processors" in subset:
        procs = processor_facts(client, system)
        facts["processors"] = procs
        facts["gpus"] = None if procs is None else [p for p in procs if p["type"] == "GPU"]
    if "managers" in subset:
        facts["managers"] = manager_facts(client, path)
    if "firmware" in subset:
        facts["firmware"] = firmware_inventory(client, path)
    facts["unsupported"] = sorted(k for k, v in facts.items() if v is None)
    return facts
