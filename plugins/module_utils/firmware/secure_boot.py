# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""A node's UEFI Secure Boot state, read two ways, and the decision whether it may join.

- In band, on the booted node: the firmware's global variables ``SecureBoot`` and
  ``SetupMode`` (efivarfs files ``<name>-8be4df61-93ca-11d2-aa0d-00e098032b8c``: four bytes of
  attributes, then one data byte; 1/0 is enforcing with keys enrolled) and the kernel's own line
  (``secureboot: Secure boot enabled`` or ``... disabled``). On a node up for long the kernel's
  ring buffer may have dropped that line; then the kernel's lockdown (``/sys/kernel/security/
  lockdown``), which Debian's and Ubuntu's kernels switch to ``integrity`` when they boot under
  Secure Boot, is its reading instead.
- Out of band, from the BMC: Redfish ``Systems/<id>/SecureBoot`` (``SecureBootEnable``,
  ``SecureBootCurrentBoot``, ``SecureBootMode``; read by redfish/secure_boot.py).

Pure functions: no file reads, no clock. Fail-closed: a variable that is missing or has the
wrong size, a kernel log without the line, a BMC that does not offer the resource or answers
outside the schema is a reason to refuse, never a pass. Both readings must say enforcing: the
BMC's answer can come from its configuration (sushy-tools derives it from the machine's
variable store template), the node's from the firmware that booted it.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import re

from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError

__all__ = ["EFI_GLOBAL", "VARIABLES", "KERNEL_LINE", "SecureBootError", "efivar_value", "slurped", "hex_variables",
           "lockdown_mode", "node_state", "bmc_reasons", "node_reasons", "verdict"]

EFI_GLOBAL = "8be4df61-93ca-11d2-aa0d-00e098032b8c"
VARIABLES = ("SecureBoot", "SetupMode")
# Linux prints one of these at boot (arch/x86/kernel/setup.c, "secureboot: ...").
KERNEL_LINE = re.compile(r"Secure boot (enabled|disabled|could not be determined)")
LOCKDOWN_PATH = "/sys/kernel/security/lockdown"
# the kernel refuses unsigned modules and kexec images in these (security/lockdown/lockdown.c)
LOCKED_DOWN = ("integrity", "confidentiality")
# UserMode and DeployedMode enforce with keys enrolled; SetupMode and AuditMode do not enforce.
ENFORCING_MODES = ("UserMode", "DeployedMode")
_FIX = ("fix: turn Secure Boot on in the node's firmware with the platform's default keys (Redfish "
        "SecureBoot: SecureBootEnable true; in setup mode, ResetKeys ResetAllKeysToDefault) and bring it "
        "up again, or set gpufleet_secure_boot_required: false for this node")


class SecureBootError(GpufleetError):
    """A Secure Boot reading cannot be parsed (the caller refuses the node with the reason)."""


def efivar_value(data, name):
    """The data byte of an efivarfs file's content (bytes, or base64 text as ``slurp`` returns it)."""
    if isinstance(data, (str, type(u""))):
        try:
            data = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise SecureBootError("the efivar %s is not base64 (%r...)" % (name, data[:16]))
    if len(data) != 5:
        raise SecureBootError("the efivar %s has %d bytes; expected 5 (4 attribute bytes and 1 data byte)"
                              % (name, len(data)))
    return bytearray(data)[4]


def slurped(results):
    """{variable: content or None} from ``ansible.builtin.slurp`` results looped over the efivarfs
    files of VARIABLES (playbooks/tasks/secure_boot.yml; a failed read, a missing file, is None)."""
    found = dict((name, None) for name in VARIABLES)
    for result in results or ():
        name = str(result.get("item", "")).rsplit("/", 1)[-1].split("-", 1)[0]
        if name in found and not result.get("failed") and result.get("content") is not None:
            found[name] = result["content"]
    return found


def hex_variables(text):
    """{variable: bytes or None} from the last ``SecureBoot=<hex> SetupMode=<hex>`` in ``text``
    (the installer prints it on its console; ``missing`` for a file that is not there)."""
    found = dict((name, None) for name in VARIABLES)
    for name in VARIABLES:
        values = re.findall(r"\b%s=([0-9a-f]+|missing)\b" % name, text or "")
        if values and values[-1] != "missing":
            try:
                found[name] = binascii.unhexlify(values[-1])
            except (binascii.Error, TypeError):  # an odd number of digits: shown as the wrong size
                found[name] = b""
    return found


def lockdown_mode(content):
    """The selected mode of ``/sys/kernel/security/lockdown`` (``none [integrity] confidentiality``),
    from its text or slurp's base64; None when it was not read or shows no selected mode."""
    if content is None:
        return None
    if "[" not in content:  # base64, as slurp returns it
        try:
            content = base64.b64decode(content, validate=True).decode("ascii", "replace")
        except (binascii.Error, ValueError):
            return None
    found = re.findall(r"\[([a-z]+)\]", content)
    return found[0] if len(found) == 1 else None


def node_state(variables, kernel_log, lockdown=None):
    """The node's reading: ``variables`` {name: content, or None when the file is missing} for
    SecureBoot and SetupMode, ``kernel_log`` the kernel's messages of this boot, ``lockdown`` the
    content of LOCKDOWN_PATH (None: not read).
    -> {"SecureBoot": int or None, "SetupMode": int or None, "kernel": "enabled"|...|None,
        "lockdown": mode or None, "errors": [...]}"""
    state = {"errors": [], "lockdown": lockdown_mode(lockdown)}
    for name in VARIABLES:
        content = variables.get(name)
        state[name] = None
        if content is None:
            state["errors"].append("the efivar %s-%s is missing (no UEFI, or efivarfs is not mounted)"
                                   % (name, EFI_GLOBAL))
            continue
        try:
            state[name] = efivar_value(content, name)
        except SecureBootError as exc:
            state["errors"].append(exc.msg)
    found = KERNEL_LINE.findall(kernel_log or "")
    state["kernel"] = found[-1] if found else None
    return state


def node_reasons(state):
    """Why the node's own reading is not enforcing ([] when it is)."""
    reasons = list(state["errors"])
    if state.get("SecureBoot") not in (None, 1):
        reasons.append("the firmware reports SecureBoot=%d (off)" % state["SecureBoot"])
    if state.get("SetupMode") not in (None, 0):
        reasons.append("the firmware is in setup mode (SetupMode=%d: no platform key, nothing is verified)"
                       % state["SetupMode"])
    if state.get("kernel") is None:
        # the boot line has rotated out of the ring buffer on a long-up node: the lockdown the
        # kernel entered at that boot still says what it enforces
        if state.get("lockdown") not in LOCKED_DOWN:
            reasons.append("the kernel log of this boot has no 'Secure boot ...' line and the kernel's lockdown "
                           "(%s) is %s, not %s" % (LOCKDOWN_PATH, state.get("lockdown") or "unreadable",
                                                   " or ".join(LOCKED_DOWN)))
    elif state["kernel"] != "enabled":
        reasons.append("the kernel says 'Secure boot %s'" % state["kernel"])
    return reasons


def bmc_reasons(facts):
    """Why the BMC's Redfish SecureBoot reading is not enforcing ([] when it is). ``facts`` is
    redfish_info's ``secure_boot`` (None: the BMC does not offer the resource)."""
    if facts is None:
        return ["the BMC offers no Redfish SecureBoot resource, so its state cannot be read"]
    reasons = []
    if facts.get("enable") is not True:
        reasons.append("the BMC reports SecureBootEnable=%s" % _shown(facts.get("enable")))
    if facts.get("current_boot") != "Enabled":
        reasons.append("the BMC reports SecureBootCurrentBoot=%s" % _shown(facts.get("current_boot")))
    if facts.get("mode") not in ENFORCING_MODES:
        reasons.append("the BMC reports SecureBootMode=%s (enforcing: %s)"
                       % (_shown(facts.get("mode")), " or ".join(ENFORCING_MODES)))
    return reasons


def _shown(value):
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def verdict(bmc_facts, node, variables, kernel_log, lockdown=None):
    """Whether ``node``, which requires Secure Boot, may join.
    -> {"passed", "reasons", "node_state", "bmc", "msg"}; ``passed`` only when both readings say enforcing."""
    state = node_state(variables, kernel_log, lockdown)
    reasons = ["BMC: %s" % r for r in bmc_reasons(bmc_facts)] + ["node: %s" % r for r in node_reasons(state)]
    if reasons:
        msg = ("Node %s is refused before it joins: Secure Boot is required and not enforcing: %s; %s."
               % (node, "; ".join(reasons), _FIX))
    else:
        msg = "Secure Boot is enforcing on %s (the BMC and the node's firmware agree)" % node
    return {"passed": not reasons, "reasons": reasons, "node_state": state, "bmc": bmc_facts, "msg": msg}
