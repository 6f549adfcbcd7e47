# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Insert and eject virtual media, wherever the BMC keeps it.

VirtualMedia lives under the ComputerSystem on newer firmware (Redfish 2021.1+, sushy-tools)
and under the Manager on older ones (iDRAC 4/5, iLO 5); both are discovered by link. The
device is chosen by the media types it accepts, never by a vendor-specific id like "CD".
An insert or eject whose answer is lost is not sent again: the device is read once and
its ``Image``/``Inserted`` decide (actions.py).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

try:
    from urllib.parse import urlsplit
except ImportError:  # pragma: no cover - Python 2
    from urlparse import urlsplit

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import discovery
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.actions import (
    patch_once, send_once, settled_note, unknown_outcome,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    DiscoveryError, ParameterError, UnsupportedValueError,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.fields import Fields
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.quirks import quirk

__all__ = ["MEDIA_TYPES", "IMAGE_SCHEMES", "check_image_url", "media_type_for", "devices",
           "checked_device", "insert_media", "eject_media"]

MEDIA_TYPES = {"cd": ("CD", "DVD"), "usb": ("USBStick",), "floppy": ("Floppy",)}
# The BMC fetches the image itself. Only HTTP(S): the insert sends no TransferProtocolType,
# so NFS/CIFS shares (which some BMCs accept with it) are not supported here.
IMAGE_SCHEMES = ("http", "https")
_SERVE = ("serve the image from an HTTP(S) server the BMC can reach and set %s to its http:// "
          "or https:// URL")


def check_image_url(image_url, option="image_url"):
    """Refuse an image URL no BMC can fetch, before anything is sent (ParameterError)."""
    problem, fix = _image_url_problem(image_url)
    if problem:
        shown = _masked(repr(image_url))
        shown = shown if len(shown) <= 120 else shown[:117] + "..."
        raise ParameterError("%s %s %s; fix: %s." % (option, shown, problem, fix % option),
                             option=option)
    return image_url


def _masked(text):
    """``text`` with the password of a user:password@ part replaced (never in an error)."""
    return re.sub(r"(//[^/@:]*:)[^/@]*@", r"\1***@", text)


def _image_url_problem(image_url):
    """``(problem, fix)`` of an image URL, ``(None, None)`` for a usable one."""
    if not isinstance(image_url, (str, type(u""))):
        return "is not a string", "set %s to the http:// or https:// URL of the image"
    if not image_url.strip():
        return "is empty", "set %s to the http:// or https:// URL of the image"
    if re.search(r"[\s\x00-\x1f\x7f]", image_url):
        return "contains a space or a control character", "percent-encode it in %s (a space is %%20)"
    try:
        parts = urlsplit(image_url)
        dummy = parts.port  # a port that is not a number raises here
    except ValueError as exc:
        return "is not a valid URL (%s)" % exc, "correct the host and port in %s"
    if parts.scheme.lower() not in IMAGE_SCHEMES:
        return ("is not an http:// or https:// URL (%s); the BMC downloads the image itself, "
                "over HTTP(S)" % ("scheme %s:" % parts.scheme if parts.scheme else "no scheme"),
                _SERVE)
    if not parts.hostname:
        return "names no host", "put the image server in %s, as in http://images.example.net/x.iso"
    return None, None


def media_type_for(image_url, media_type=None):
    """The media type to ask for: given, else from the image's extension (.iso -> cd)."""
    if media_type:
        return media_type
    return "usb" if image_url.lower().split("?", 1)[0].endswith((".img", ".raw")) else "cd"


def devices(client, system_path):
    """``[(path, resource)]`` of every VirtualMedia device of the system."""
    system = client.get(system_path)
    collections = [discovery.link(system, "VirtualMedia")]
    if not collections[0]:
        collections = [discovery.link(client.get(m), "VirtualMedia")
                       for m in discovery.managers_of(client, system_path)]
    paths = []
    for collection in filter(None, collections):
        paths.extend(discovery.members(client, collection))
    if not paths:
        raise DiscoveryError(
            "BMC of node %s (%s) has no VirtualMedia under the system or its managers; this "
            "BMC (or its license) does not offer virtual media. Use PXE or HTTP boot."
            % (client.node, system_path), node=client.node)
    return [(p, checked_device(client, p, client.get(p))) for p in paths]


def checked_device(client, path, dev):
    """``dev`` after checking the type of every field this module reads (named error if not)."""
    fields = Fields(dev, client.node, path)
    fields.get("Inserted", "flag")
    fields.text("Image")
    fields.texts("MediaTypes")
    actions = fields.sub("Actions")
    for name in ("#VirtualMedia.InsertMedia", "#VirtualMedia.EjectMedia"):
        if actions.get(name, "object") is not None:
            actions.sub(name).text("target", required=True)
    return dev


def _is_inserted(dev):
    return bool(dev.get("Inserted")) and bool(dev.get("Image"))


def _holds(dev, image_url):
    return _is_inserted(dev) and dev.get("Image") == image_url


def _pick(client, system_path, devs, media_type):
    wanted = MEDIA_TYPES[media_type]
    usable = [(p, d) for p, d in devs if set(wanted) & set(d.get("MediaTypes") or [])]
    if not usable:
        offered = sorted(set(t for dummy, d in devs for t in d.get("MediaTypes") or []))
        raise UnsupportedValueError(
            "No virtual media device of node %s (%s) accepts media type %s. Devices accept: "
            "%s. Set media_type to one of these."
            % (client.node, system_path, media_type, ", ".join(offered) or "nothing"),
            node=client.node, allowed=offered)
    free = [(p, d) for p, d in usable if not _is_inserted(d)]
    return (free or usable)[0]


def insert_media(client, system_id, image_url, media_type=None, write_protected=True,
                 check_mode=False, reinsert=False):
    """Insert ``image_url``; return ``{changed, device, before, image, inserted, warnings}``.

    ``reinsert``: first eject every image inserted on the system, ``image_url`` too, so the
    BMC sees a fresh insertion (always a change; the result lists the devices in ``ejected``).
    """
    check_image_url(image_url)
    system_path = discovery.find_system(client, system_id)
    media_type = media_type_for(image_url, media_type)
    devs = devices(client, system_path)
    if reinsert:
        return _reinsert(client, system_path, devs, image_url, media_type, write_protected, check_mode)
    for path, dev in devs:
        if _is_inserted(dev) and dev.get("Image") == image_url:
            return dict(changed=False, device=path, before=image_url, image=image_url,
                        inserted=True, warnings=[])
    path, dev = _pick(client, system_path, devs, media_type)
    before = dev.get("Image") if _is_inserted(dev) else None
    if check_mode:
        return dict(changed=True, device=path, before=before, image=image_url, inserted=True,
                    warnings=[])
    warnings = []
    if before:
        _eject(client, path, dev, warnings)
    return _insert_checked(client, system_path, path, dev, image_url, write_protected, before, warnings)


def _reinsert(client, system_path, devs, image_url, media_type, write_protected, check_mode):
    """Eject every inserted image, then insert ``image_url`` into the device a free pick takes."""
    held = [(p, d) for p, d in devs if _is_inserted(d)]
    path, dev = _pick(client, system_path, [(p, dict(d, Inserted=False)) for p, d in devs], media_type)
    current = dict(devs)[path]
    before = current.get("Image") if _is_inserted(current) else None
    ejected = [p for p, dummy in held]
    if check_mode:
        return dict(changed=True, device=path, before=before, image=image_url, inserted=True,
                    ejected=ejected, warnings=[])
    warnings = []
    for held_path, held_dev in held:
        _eject(client, held_path, held_dev, warnings)
    result = _insert_checked(client, system_path, path, dev, image_url, write_protected, before, warnings)
    result["ejected"] = ejected
    return result


def _insert_checked(client, system_path, path, dev, image_url, write_protected, before, warnings):
    """Send the insert, read the device back; the result (a lost answer settled by the read)."""
    lost = _insert(client, system_path, path, dev, image_url, write_protected)
    after = checked_device(client, path, client.get(path, cached=False))
    if lost:
        what = "InsertMedia of %s into %s" % (image_url, path)
        if not (_is_inserted(after) and after.get("Image") == image_url):
            raise unknown_outcome(client, what, lost, _describe(after), "Check the BMC's virtual "
                                  "media page, then re-run the task (it inserts only when needed).")
        warnings.append(settled_note(client, what, lost, _describe(after)))
    return dict(changed=True, device=path, before=before, image=after.get("Image"),
                inserted=bool(after.get("Inserted")), warnings=warnings)


def _describe(dev):
    if _is_inserted(dev):
        return "Image %s inserted" % dev.get("Image")
    return "no image inserted"


def _insert(client, system_path, path, dev, image_url, write_protected):
    """Send the insert once; the OutcomeUnknownError when its answer was lost."""
    system = client.get(system_path)
    action = dev.get("Actions", {}).get("#VirtualMedia.InsertMedia")
    body = {"Image": image_url, "Inserted": True, "WriteProtected": write_protected}
    if not action:
        # No InsertMedia action (Redfish < 2017.3, Lenovo SD530): PATCH the device.
        return patch_once(client, path, body, applied=lambda now: _holds(now, image_url))
    if quirk(system, "insert_omit_defaults"):
        body = dict((k, v) for k, v in body.items() if v is not True)
    if quirk(system, "insert_needs_credentials"):
        body.update(UserName="none", Password="none")
    return send_once(client, action["target"], body, "InsertMedia")


def _eject(client, path, dev, warnings):
    action = dev.get("Actions", {}).get("#VirtualMedia.EjectMedia")
    if action:
        # Always send a JSON body: HPE iLO 5 answers 400/415 to an empty EjectMedia POST.
        lost = send_once(client, action["target"], {}, "EjectMedia")
    else:
        lost = patch_once(client, path, {"Image": None, "Inserted": False},
                          applied=lambda now: not _is_inserted(now))
    if lost:
        what = "EjectMedia of %s" % path
        after = checked_device(client, path, client.get(path, cached=False))
        if _is_inserted(after):
            raise unknown_outcome(client, what, lost, _describe(after), "Check the BMC's "
                                  "virtual media page, then re-run the task.")
        warnings.append(settled_note(client, what, lost, _describe(after)))


def eject_media(client, system_id, image_url=None, check_mode=False):
    """Eject ``image_url`` (or everything inserted); return ``{changed, ejected, warnings}``."""
    system_path = discovery.find_system(client, system_id)
    targets = [(p, d) for p, d in devices(client, system_path) if _is_inserted(d)
               and (image_url is None or d.get("Image") == image_url)]
    warnings = []
    if not check_mode:
        for path, dev in targets:
            _eject(client, path, dev, warnings)
    return dict(changed=bool(targets), ejected=[p for p, dummy in targets],
                image=None, inserted=False, warnings=warnings)
