# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Boot a node for provisioning: virtual media, one-time boot override, power, one session.

The three steps are the same functions the single-purpose modules use (virtual_media, boot,
power); running them on one client shares the login, the service root, the system lookup and
the logout, which are most of a node's requests (docs/benchmarks.md: 12 requests per node
instead of 21 for three separate tasks). Steps run in order and stop at the first failure;
the error says which step failed and which ones had already changed the node.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.boot import set_boot
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import RedfishError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.power import set_power
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.virtual_media import (
    check_image_url, insert_media,
)

__all__ = ["POWER_ACTIONS", "ProvisionStepError", "provision"]

# power option -> redfish_power state (None: leave power alone)
POWER_ACTIONS = {"on": "on", "restart": "restart", "force_restart": "force_restart",
                 "power_cycle": "power_cycle", "none": None}


class ProvisionStepError(RedfishError):
    """One step failed; ``details`` name the step and the steps that had changed the node."""


def provision(client, system_id, boot_target, image_url=None, media_type=None,
              write_protected=True, boot_enabled="once", boot_mode=None, power="on",
              wait=False, timeout=300, poll=2.0, check_mode=False, media_reinsert=False):
    """Return ``{changed, media, boot, power, warnings}``; raise ProvisionStepError.

    ``media_reinsert``: the media step ejects whatever is inserted (``image_url`` too) before
    inserting (``virtual_media.insert_media``'s ``reinsert``).
    """
    result = dict(changed=False, media=None, boot=None, power=None, warnings=[])
    if image_url is not None:  # "" too: refused, not taken for "no media step"
        check_image_url(image_url)
    steps = []
    if image_url is not None:
        steps.append(("media", lambda: insert_media(
            client, system_id, image_url, media_type, write_protected, check_mode,
            reinsert=media_reinsert)))
    steps.append(("boot", lambda: set_boot(client, system_id, boot_target, boot_enabled,
                                           boot_mode, check_mode)))
    if POWER_ACTIONS[power]:
        steps.append(("power", lambda: set_power(
            client, system_id, POWER_ACTIONS[power], check_mode=check_mode, wait=wait,
            timeout=timeout, poll=poll, read_back=False)))
    for name, step in steps:
        try:
            outcome = step()
        except RedfishError as exc:
            raise _step_error(client, name, exc, result)
        result["warnings"].extend(outcome.pop("warnings", None) or [])
        result[name] = outcome
        result["changed"] = result["changed"] or outcome["changed"]
    _warn_when_not_rebooted(client, power, result)
    return result


def _step_error(client, name, exc, result):
    done = [step for step in ("media", "boot", "power") if (result[step] or {}).get("changed")]
    already = ("; already changed on the node: %s" % ", ".join(done)) if done else \
        "; nothing had been changed on the node"
    details = dict(exc.details)
    details.update(step=name, changed_steps=done)
    return ProvisionStepError("%s (redfish_provision step %s%s)" % (exc.msg, name, already),
                              **details)


def _warn_when_not_rebooted(client, power, result):
    """power=on leaves a running node running: the new media/boot wait for its next boot."""
    power_result = result["power"] or {}
    staged = any((result[step] or {}).get("changed") for step in ("media", "boot"))
    if power == "on" and staged and power_result.get("before") == "On":
        result["warnings"].append(
            "Node %s was already On: the new boot settings take effect at its next boot. Use "
            "power: force_restart to boot it into them now." % client.node)
