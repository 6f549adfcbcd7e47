# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Boot source override (target, once/continuous, UEFI/Legacy), read back after setting.

The BMC is the judge of what it applied: after the PATCH the system is read again and the
result reports the values it now shows; a difference is reported as a warning. A BMC
known to read a one-time override back as ``Continuous`` (quirk ``boot_once_reads_continuous``:
sushy-tools' fake driver) counts ``Continuous`` as ``Once``, so check mode and the real run
agree and a second run sends no PATCH. A PATCH whose answer is lost is judged by the values
read back, never sent again.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import discovery
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.actions import (
    patch_once, settled_note, unknown_outcome,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    UnsupportedValueError,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.fields import Fields
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.quirks import quirk

__all__ = ["TARGETS", "ENABLED", "MODES", "current_boot", "set_boot"]

TARGETS = {"pxe": "Pxe", "cd": "Cd", "hdd": "Hdd", "uefi_http": "UefiHttp", "bios_setup": "BiosSetup",
           "none": "None"}
ENABLED = {"once": "Once", "continuous": "Continuous", "disabled": "Disabled"}
MODES = {"uefi": "UEFI", "legacy": "Legacy"}
FIELDS = (("target", "BootSourceOverrideTarget"), ("enabled", "BootSourceOverrideEnabled"),
          ("mode", "BootSourceOverrideMode"))


def current_boot(system, node=""):
    """``{target, enabled, mode}`` of the system's Boot object (None where absent)."""
    boot = Fields(system, node).sub("Boot")
    return dict((key, boot.text(field)) for key, field in FIELDS)


def _desired(client, system, path, target, enabled, mode):
    boot = Fields(system, client.node, path).sub("Boot")
    want = {"target": TARGETS[target], "enabled": ENABLED[enabled]}
    if mode:
        want["mode"] = MODES[mode]
    alias = (quirk(system, "boot_target_alias") or {}).get(want["target"])
    allowed_targets = boot.texts("BootSourceOverrideTarget@Redfish.AllowableValues")
    if alias and allowed_targets and alias in allowed_targets:
        want["target"] = alias
    for key, field in FIELDS:
        allowed = boot.texts(field + "@Redfish.AllowableValues")
        if key in want and allowed is not None and want[key] not in allowed and want[key] != "None":
            raise UnsupportedValueError(
                "Boot %s %r is not allowed by the BMC of node %s (%s). Allowed: %s. Set %s to "
                "one of these." % (key, want[key], client.node, path, ", ".join(allowed),
                                   "boot_" + key if key != "enabled" else "boot_enabled"),
                node=client.node, allowed=list(allowed))
    return want


def _same(system, key, want, have):
    """True when the BMC's ``have`` means ``want`` (quirk: Once reads back as Continuous)."""
    if want == have:
        return True
    return (key == "enabled" and want == "Once" and have == "Continuous"
            and bool(quirk(system, "boot_once_reads_continuous")))


def _differs(system, want, have):
    return dict((k, v) for k, v in sorted(want.items()) if not _same(system, k, v, have.get(k)))


def set_boot(client, system_id, target, enabled="once", mode=None, check_mode=False):
    """Set the override; return ``{changed, before, requested, applied, warnings}``."""
    path = discovery.find_system(client, system_id)
    system = client.get(path)  # read moments ago by discovery, in this run
    before = current_boot(system, client.node)
    want = _desired(client, system, path, target, enabled, mode)
    if not _differs(system, want, before):
        return dict(changed=False, before=before, requested=want, applied=before, warnings=[])
    if check_mode:
        after = dict(before, **want)
        return dict(changed=True, before=before, requested=want, applied=after, warnings=[])
    body = {"BootSourceOverrideTarget": want["target"], "BootSourceOverrideEnabled": want["enabled"]}
    if "mode" in want:
        body["BootSourceOverrideMode"] = want["mode"]
    lost = patch_once(client, path, {"Boot": body},
                      applied=lambda now: not _differs(system, want, current_boot(now, client.node)))
    applied = current_boot(client.get(path, cached=False), client.node)
    missing = _differs(system, want, applied)
    warnings = [
        "Node %s: requested boot %s %s but the BMC reports %s." % (client.node, k, v, applied.get(k))
        for k, v in missing.items()
    ]
    if lost:
        shown = ", ".join("%s %s" % (k, applied.get(k)) for k in sorted(want))
        if missing:
            raise unknown_outcome(client, "Boot override PATCH (%s)" % path, lost, shown,
                                  "Check the boot override on the BMC, then re-run the task.")
        warnings.append(settled_note(client, "boot override PATCH", lost, shown))
    return dict(changed=applied != before, before=before, requested=want, applied=applied,
                warnings=warnings)
