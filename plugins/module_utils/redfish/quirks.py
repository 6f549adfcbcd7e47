# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Vendor differences as data. Code asks ``quirk(system, name)``; no vendor ``if`` elsewhere.

Each entry names the vendor and model it was seen on and has a fixture under
tests/unit/plugins/module_utils/redfish/fixtures/<vendor>/. Most differences are not
vendor-specific and are discovered instead (VirtualMedia under Systems or Managers,
InsertMedia action or PATCH, allowed values present or not).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

__all__ = ["QUIRKS", "quirk", "vendor_of"]

QUIRKS = {
    # Supermicro X11/X12: virtual media is a USB CD; boot target "Cd" does not boot it,
    # "UsbCd" does (same finding as sushy's system.py note).
    "supermicro": {
        "boot_target_alias": {"Cd": "UsbCd"},
        # X11 rejects InsertMedia bodies carrying Inserted/WriteProtected at defaults.
        "insert_omit_defaults": True,
    },
    # NVIDIA DGX BMC (AMI based): InsertMedia requires UserName/Password to be present.
    "nvidia": {"insert_needs_credentials": True},
    # sushy-tools (Manufacturer "Sushy Emulator"), fake and libvirt drivers: a one-time boot
    # override reads back as Continuous (the driver keeps no Once). Continuous then counts
    # as Once, or every run would PATCH and check mode would always predict a change.
    "sushy": {"boot_once_reads_continuous": True},
}

_ALIASES = {"hewlett packard enterprise": "hpe", "hp": "hpe", "nvidia corporation": "nvidia"}


def vendor_of(system):
    manufacturer = system.get("Manufacturer") if isinstance(system, dict) else None
    # A non-text Manufacturer is the readers' error to report (fields.py); here: no vendor.
    manufacturer = manufacturer.strip().lower() if isinstance(manufacturer, str) else ""
    return _ALIASES.get(manufacturer, manufacturer.split(" ")[0] if manufacturer else "")


def quirk(system, name, default=None):
    """The value of quirk ``name`` for this system's vendor, else ``default``."""
    return QUIRKS.get(vendor_of(system), {}).get(name, default)
