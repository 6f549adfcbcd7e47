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
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.fields import (
    POWER_STATES, Fields,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.firmware import (
    firmware_inventory,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.logs import (
    DEFAULT_LIMIT, log_entries,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.secure_boot import (
    secure_boot_facts,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.trusted_components import (
    tpm_certificates,
)

__all__ = ["SUBSETS", "CHOICES", "gather", "system_facts", "nic_facts", "processor_facts", "manager_facts"]

SUBSETS = ("system", "nics", "processors", "managers", "firmware")
# Read only when asked: a log can hold thousands of entries (one or more GETs per page), and
# a BMC that lists trusted components but no TPM certificate fails the node (fail-closed).
CHOICES = SUBSETS + ("logs", "tpm", "secure_boot")


def _health(fields):
    status = fields.sub("Status")
    # Read (and so type-check) all three before choosing: the rollup wins when present.
    values = [status.text(k) for k in ("HealthRollup", "HealthRollUp", "Health")]
    return next((v for v in values if v), None)


def system_facts(system, node=""):
    """Facts of a ComputerSystem; a field of the wrong type is a named BmcResponseError."""
    f = Fields(system, node)
    boot = f.sub("Boot")
    return dict(
        id=f.text("Id", required=True), name=f.text("Name"), manufacturer=f.text("Manufacturer"),
        model=f.text("Model"), serial_number=f.text("SerialNumber"), sku=f.text("SKU"),
        uuid=f.text("UUID"), power_state=f.text("PowerState", choices=POWER_STATES),
        health=_health(f), state=f.sub("Status").text("State"), bios_version=f.text("BiosVersion"),
        boot=dict(current_boot(system, node), allowed_targets=boot.texts(
            "BootSourceOverrideTarget@Redfish.AllowableValues")),
        memory_gib=f.sub("MemorySummary").get("TotalSystemMemoryGiB", "number"),
        processor_count=f.sub("ProcessorSummary").get("Count", "integer"),
    )


def _collection(client, resource, key):
    """Member resources of ``resource[key]`` as Fields, or None when the BMC lacks it."""
    path = discovery.link(resource, key, node=client.node)
    if not path or discovery.optional(client, path) is None:
        return None
    return [Fields(client.get(p), client.node, p) for p in discovery.members(client, path)]


def nic_facts(client, system):
    nics = _collection(client, system, "EthernetInterfaces")
    if nics is None:
        return None
    return [dict(id=n.text("Id", required=True), name=n.text("Name"),
                 mac=n.text("PermanentMACAddress") or n.text("MACAddress"),
                 link_status=n.text("LinkStatus")) for n in nics]


def processor_facts(client, system):
    procs = _collection(client, system, "Processors")
    if procs is None:
        return None
    return [dict(id=p.text("Id", required=True), type=p.text("ProcessorType"),
                 manufacturer=p.text("Manufacturer"), model=p.text("Model"),
                 cores=p.get("TotalCores", "integer"), threads=p.get("TotalThreads", "integer"),
                 memory_mib=p.sub("MemorySummary").get("TotalMemorySizeMiB", "number"),
                 health=p.sub("Status").text("Health")) for p in procs]


def manager_facts(client, system_path):
    result = []
    for path in discovery.managers_of(client, system_path):
        mgr = discovery.optional(client, path)
        if mgr is not None:
            m = Fields(mgr, client.node, path)
            result.append(dict(id=m.text("Id", required=True), model=m.text("Model"),
                               manager_type=m.text("ManagerType"),
                               firmware_version=m.text("FirmwareVersion"), uuid=m.text("UUID"),
                               health=m.sub("Status").text("Health")))
    return result


def gather(client, system_id=None, subset=SUBSETS, log_limit=DEFAULT_LIMIT):
    """Facts for the subsets asked; ``unsupported`` lists what the BMC does not offer.
    ``log_limit``: how many of the newest log entries ``logs`` returns."""
    path = discovery.find_system(client, system_id)
    system = client.get(path)
    facts = dict(system=system_facts(system, client.node))
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
    if "logs" in subset:
        facts["logs"] = log_entries(client, path, log_limit)
    if "tpm" in subset:
        facts["tpm"] = tpm_certificates(client, path)
    if "secure_boot" in subset:
        facts["secure_boot"] = secure_boot_facts(client, path)
    facts["unsupported"] = sorted(k for k, v in facts.items() if v is None)
    return facts
