# -*- coding: utf-8 -*-
# Part of the gpufleet controller package (controller/gpufleet); never shipped in the collection.
"""Pin files: one YAML file per image version, validated before any build.

A pin file names the base OS, the apt sources and keys, and per component the exact
apt version of every package to install. ``load_pins`` checks it completely (unknown
component, missing version, driver/CUDA incompatibility, unsorted keys) and returns
a ``Pins`` object; ``render_pkrvars`` turns it into Packer variables.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import re

from gpufleet.image import compat
from ansible_collections.gpufleet.baremetal.plugins.module_utils import strict_yaml
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import PinError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.strict_yaml import StrictYamlError

__all__ = ["COMPONENTS", "REQUIRED_COMPONENTS", "Pins", "list_versions", "load_pins", "parse_pins", "render_pkrvars"]

COMPONENTS = (
    "boot", "container_runtime", "cuda", "dcgm", "fabric_manager", "gpu_driver", "health_agents",
    "kernel", "nccl", "nvidia_container_toolkit", "python", "rdma", "scheduler", "tools",
)
REQUIRED_COMPONENTS = {
    "production": ("container_runtime", "cuda", "dcgm", "gpu_driver", "health_agents", "kernel",
                   "nccl", "nvidia_container_toolkit", "rdma"),
    "lab": ("python", "rdma", "scheduler", "tools"),
}
TOP_KEYS = ("apt_keys", "apt_sources", "base_image", "components", "description", "disk_image",
            "os", "profile", "release_date", "version")
PACKAGE_RE = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")
# Debian policy: [epoch:]upstream[-revision]; no spaces, no wildcards (a pin is exact).
DEB_VERSION_RE = re.compile(r"^(\d+:)?[0-9][A-Za-z0-9.+~:-]*$")
# "lab" and "lab-<name>" (lab-machine: the lab image a virtual machine boots) or YYYY.MM.N
IMAGE_VERSION_RE = re.compile(r"^(lab(-[a-z0-9]+)?|\d{4}\.\d{2}\.\d+)$")
FINGERPRINT_RE = re.compile(r"^[0-9A-F]{40}$")


class Pins(object):
    """A validated pin file."""

    def __init__(self, data, path, sha256):
        self.data = data
        self.path = path
        self.sha256 = sha256

    @property
    def version(self):
        return self.data["version"]

    @property
    def packages(self):
        """Every pinned package across components: name -> exact version."""
        merged = {}
        for comp in sorted(self.data["components"]):
            merged.update(self.data["components"][comp]["packages"])
        return merged

    def source_date_epoch(self):
        """Seconds of release_date 00:00 UTC: the clamp for artifact timestamps."""
        import calendar
        import time
        return int(calendar.timegm(time.strptime(self.data["release_date"], "%Y-%m-%d")))


def _fail(path, what, fix):
    raise PinError("Pin file %s is invalid: %s. %s" % (path, what, fix), pin_file=path)


def _check_sorted(path, mapping, where):
    keys = list(mapping)
    for key in keys:
        if not isinstance(key, str):
            _fail(path, "key %r of %s is not a string" % (key, where), "Quote it.")
    if keys != sorted(keys):
        _fail(path, "keys of %s are not sorted (%s)" % (where, ", ".join(keys)),
              "Sort them so reviews show real changes only.")


def _check_top(path, data):
    if not isinstance(data, dict):
        _fail(path, "the top level is not a mapping", "See packer/versions/lab.yml for the layout.")
    missing = [k for k in TOP_KEYS if k not in data]
    unknown = [k for k in data if k not in TOP_KEYS]
    if missing or unknown:
        _fail(path, "missing keys %s, unknown keys %s" % (missing, unknown), "Allowed keys: %s." % ", ".join(TOP_KEYS))
    _check_sorted(path, data, "the top level")
    if not IMAGE_VERSION_RE.match(str(data["version"])):
        _fail(path, 'version "%s" is neither "lab", "lab-<name>" nor YYYY.MM.N' % data["version"],
              "Use e.g. 2026.06.2.")
    expected = os.path.basename(path).rsplit(".", 1)[0]
    if str(data["version"]) != expected:
        _fail(path, 'version "%s" does not match the file name' % data["version"], "Name the file %s.yml." % data["version"])
    if not isinstance(data["profile"], str) or data["profile"] not in REQUIRED_COMPONENTS:
        _fail(path, 'profile "%s" is unknown' % data["profile"], "Use one of: %s." % ", ".join(sorted(REQUIRED_COMPONENTS)))
    if not re.match(r"^\d{4}-\d{2}-\d{2}$", str(data["release_date"])):
        _fail(path, 'release_date "%s" is not YYYY-MM-DD' % data["release_date"], "Quote it, e.g. \"2026-06-01\".")
    for key in ("id", "version_id", "codename"):
        if not isinstance(data["os"], dict) or not str(data["os"].get(key) or ""):
            _fail(path, "os.%s is missing" % key, "Give os.id, os.version_id and os.codename.")


def _check_repos(path, data):
    if not isinstance(data["apt_sources"], list) or not all(str(s).startswith("deb ") for s in data["apt_sources"]):
        _fail(path, "apt_sources must be a list of one-line 'deb ...' entries", "Write complete sources.list lines.")
    if not isinstance(data["apt_keys"] or [], list):
        _fail(path, "apt_keys must be a list", "Write apt_keys: [] or a list of {name, url, fingerprint}.")
    for index, key in enumerate(data["apt_keys"] or []):
        if not isinstance(key, dict) or sorted(map(str, key)) != ["fingerprint", "name", "url"] or not FINGERPRINT_RE.match(str(key["fingerprint"])):
            _fail(path, "apt_keys[%d] (%r) needs name, url and a 40-hex uppercase fingerprint" % (index, key),
                  "Copy the fingerprint from `gpg --show-keys` of the vendor key.")
    disk = data["disk_image"]
    if not isinstance(disk, dict) or sorted(map(str, disk)) != ["checksum", "url"]:
        _fail(path, "disk_image needs exactly url and checksum", "Give the cloud image URL and its checksum (sha256:..., file:URL).")


def _check_component(path, name, comp):
    if name not in COMPONENTS:
        _fail(path, 'component "%s" is unknown' % name, "Known components: %s." % ", ".join(COMPONENTS))
    if not isinstance(comp, dict) or sorted(map(str, comp)) != ["packages", "version"]:
        _fail(path, "component %s needs exactly 'version' and 'packages'" % name, "See packer/versions/lab.yml.")
    if not str(comp["version"] or "").strip():
        _fail(path, "component %s has no version" % name, "Set components.%s.version." % name)
    if not isinstance(comp["packages"], dict) or not comp["packages"]:
        _fail(path, "component %s pins no packages" % name, "List at least one package: exact version.")
    _check_sorted(path, comp["packages"], "components.%s.packages" % name)
    for pkg, version in comp["packages"].items():
        if not PACKAGE_RE.match(str(pkg)):
            _fail(path, 'package name "%s" in %s is not a Debian package name' % (pkg, name), "Fix the name.")
        if version is None or not DEB_VERSION_RE.match(str(version)):
            _fail(path, 'package %s in %s has no exact version (got "%s")' % (pkg, name, version),
                  "Pin the exact apt version, e.g. from `apt-cache policy %s`." % pkg)


def _check_components(path, data):
    comps = data["components"]
    if not isinstance(comps, dict):
        _fail(path, "components is not a mapping", "See packer/versions/lab.yml.")
    _check_sorted(path, comps, "components")
    for name, comp in comps.items():
        _check_component(path, name, comp)
    missing = [c for c in REQUIRED_COMPONENTS[data["profile"]] if c not in comps]
    if missing:
        _fail(path, "profile %s requires components %s" % (data["profile"], ", ".join(missing)), "Pin them.")
    seen = {}
    for name in sorted(comps):
        for pkg in comps[name]["packages"]:
            if pkg in seen:
                _fail(path, "package %s is pinned by both %s and %s" % (pkg, seen[pkg], name), "Pin it once.")
            seen[pkg] = name
    problems = compat.check_stack({k: {"version": str(v["version"]), "packages": {p: str(x) for p, x in v["packages"].items()}}
                                   for k, v in comps.items()})
    if problems:
        _fail(path, "incompatible GPU stack: " + "; ".join(problems), "Pin a matching set.")


def _normalize(data):
    data["version"] = str(data["version"])
    for comp in data["components"].values():
        comp["version"] = str(comp["version"])
        comp["packages"] = dict((str(k), str(v)) for k, v in comp["packages"].items())
    return data


def _yaml_message(path, exc):
    """'Pin file P is not valid YAML: line N: problem. Fix.' from the strict reader's error."""
    problem = exc.problem[len("not valid YAML: "):] if exc.problem.startswith("not valid YAML: ") else exc.problem
    where = "line %d: " % exc.line if exc.line else ""
    return "Pin file %s is not valid YAML: %s%s. %s." % (path, where, problem, exc.fix[:1].upper() + exc.fix[1:])


def parse_pins(text, path):
    """Validate pin-file text; ``path`` names it in errors and fixes the expected version."""
    try:
        data = strict_yaml.loads(text, path)
    except StrictYamlError as exc:
        raise PinError(_yaml_message(path, exc), pin_file=path) from None
    _check_top(path, data)
    _check_repos(path, data)
    _check_components(path, data)
    return Pins(_normalize(data), path, hashlib.sha256(text.encode("utf-8")).hexdigest())


def load_pins(versions_dir, version):
    """Load and validate ``<versions_dir>/<version>.yml``."""
    path = os.path.join(versions_dir, "%s.yml" % version)
    if not os.path.isfile(path):
        known = ", ".join(list_versions(versions_dir)) or "none"
        raise PinError("Image version %s has no pin file at %s. Known versions: %s. Create the file or pick one."
                       % (version, path, known), version=version)
    with open(path, "rb") as handle:
        raw = handle.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PinError("Pin file %s is not UTF-8 text (byte %d). Save it as UTF-8." % (path, exc.start), pin_file=path)
    return parse_pins(text, path)


def list_versions(versions_dir):
    """Image versions that have a pin file, sorted."""
    if not os.path.isdir(versions_dir):
        return []
    return sorted(name[:-4] for name in os.listdir(versions_dir) if name.endswith(".yml"))


def render_pkrvars(pins, build_id, output_dir):
    """Packer variables (a ``.pkrvars.json`` document) for one build of ``pins``."""
    data = pins.data
    return {
        "apt_keys": [dict(k) for k in data["apt_keys"] or []],
        "apt_sources": list(data["apt_sources"]),
        "base_image": data["base_image"],
        "build_id": build_id,
        "disk_image_checksum": data["disk_image"]["checksum"],
        "disk_image_url": data["disk_image"]["url"],
        "image_version": data["version"],
        "os_id": str(data["os"]["id"]),
        "os_version_id": str(data["os"]["version_id"]),
        "output_dir": output_dir,
        "packages": pins.packages,
        "pins_sha256": pins.sha256,
    }
