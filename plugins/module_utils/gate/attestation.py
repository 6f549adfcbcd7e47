# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Attestation checks: the image release file against the signed manifest, firmware pins.

``/etc/gpufleet/image-release`` is written by the image build (os-release style
``KEY="value"`` lines with at least VERSION, BUILD_ID and PINS_SHA256). The controller
passes the values it read from the verified, signed manifest; every expected key must
match exactly. Firmware versions come from Redfish (``redfish_info`` firmware inventory,
a list of {id, name, version, updateable}) and are judged against the profile's pins.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers._common import numbered_lines
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.judging import judge_local

__all__ = ["IMAGE_RELEASE_PATH", "REQUIRED_KEYS", "parse_image_release", "judge_image_release",
           "extract_image_release", "firmware_versions", "extract_firmware"]

IMAGE_RELEASE_PATH = "/etc/gpufleet/image-release"
REQUIRED_KEYS = ("VERSION", "BUILD_ID", "PINS_SHA256")
_TOOL = "image-release"


def _unquote(value):
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
        if value and "\\" in value:
            value = value.replace('\\"', '"').replace("\\$", "$").replace("\\`", "`").replace("\\\\", "\\")
    return value


def parse_image_release(text):
    """os-release style text -> {KEY: value}; raises ParseError when a required key is missing."""
    if not (text or "").strip():
        raise ParseError(_TOOL, "KEY=\"value\" lines", why="the file is empty")
    values = {}
    for number, line in numbered_lines(text):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        key, sep, value = stripped.partition("=")
        if not sep or not key.replace("_", "").isalnum():
            raise ParseError(_TOOL, 'KEY="value"', number, line)
        values[key] = _unquote(value)
    missing = [k for k in REQUIRED_KEYS if not values.get(k)]
    if missing:
        raise ParseError(_TOOL, "the keys %s" % ", ".join(REQUIRED_KEYS), why="missing: %s" % ", ".join(missing))
    return values


def judge_image_release(found, expected):
    """Compare the node's release values with the expected ones from the signed manifest."""
    expected = dict((str(k), str(v)) for k, v in (expected or {}).items())
    shown = tuple(sorted((k, found.get(k)) for k in expected))
    pinned = tuple(sorted(expected.items()))
    if "VERSION" not in expected:
        return judge_local("image_release", None, pinned, False,
                           "image_release: no expected VERSION was given, so the image cannot be attested; pass "
                           "expected_release with the values of the verified signed manifest")
    wrong = ["%s is %s, expected %s" % (k, found.get(k, "missing"), v) for k, v in sorted(expected.items())
             if found.get(k) != v]
    if wrong:
        return judge_local("image_release", shown, pinned, False,
                           "image_release: %s; reimage the node from the signed artifact" % "; ".join(wrong))
    return judge_local("image_release", shown, pinned, True,
                       "image_release: %s matches the signed manifest (%d keys)" % (found["VERSION"], len(expected)))


def extract_image_release(texts, ctx):
    found = parse_image_release(texts.get("", ""))
    return {"image_release": judge_image_release(found, ctx.opt("expected_release"))}


def firmware_versions(inventory):
    """{component: version} from a Redfish firmware inventory; both ``id`` and ``name`` are keys."""
    if not isinstance(inventory, list) or not inventory:
        raise ParseError("firmware inventory", "a non-empty list of {id, name, version}")
    versions = {}
    for number, item in enumerate(inventory, 1):
        if not isinstance(item, dict) or not item.get("version") or not (item.get("id") or item.get("name")):
            raise ParseError("firmware inventory", "{id, name, version} items", number, json.dumps(item))
        for key in ("id", "name"):
            if item.get(key):
                versions[str(item[key])] = str(item["version"])
    return versions


def extract_firmware(texts, ctx):
    text = texts.get("", "")
    try:
        inventory = json.loads(text)
    except ValueError as exc:
        raise ParseError("firmware inventory", "JSON", why=str(exc))
    return {"firmware_pins": (firmware_versions(inventory), ())}
