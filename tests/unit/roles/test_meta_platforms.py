"""The platforms every role's meta declares are the OSes the image pin files build, and the docs say so.

The roles run on the golden image, so its OS (``os`` in ``packer/versions/<version>.yml``) is
what they must support; ``docs/roles.md`` states the same list in its "Platforms" paragraph.
"""
import glob
import os
import re

import pytest
import yaml

from gpufleet.image.pins import list_versions, load_pins
from tests.helpers import ROOT

PIN_FILES = os.path.join(ROOT, "packer", "versions")
ROLES_DOC = os.path.join(ROOT, "docs", "roles.md")
# os-release ID -> Galaxy platform name
GALAXY_NAME = {"debian": "Debian", "ubuntu": "Ubuntu"}
ROLE_METAS = sorted(glob.glob(os.path.join(ROOT, "roles", "*", "meta", "main.yml")))


def _pinned_platforms():
    """{(Galaxy name, version id, codename)} of every pin file's OS."""
    found = set()
    for version in list_versions(PIN_FILES):
        system = load_pins(PIN_FILES, version).data["os"]
        assert system["id"] in GALAXY_NAME, "%s.yml: os.id %r has no Galaxy platform name here" % (version,
                                                                                                system["id"])
        found.add((GALAXY_NAME[system["id"]], str(system["version_id"]), system["codename"]))
    return found


def _meta_platforms(path):
    with open(path) as handle:
        platforms = yaml.safe_load(handle)["galaxy_info"]["platforms"]
    return {(p["name"], str(v)) for p in platforms for v in p["versions"]}


def _documented_platforms():
    with open(ROLES_DOC) as handle:
        paragraphs = handle.read().split("\n\n")
    stated = [p for p in paragraphs if p.startswith("Platforms (every role's `meta/main.yml`):")]
    assert len(stated) == 1, "docs/roles.md needs one paragraph starting \"Platforms (every role's `meta/main.yml`):\""
    return set(re.findall(r"\b(Debian|Ubuntu) ([\d.]+) \((\w+)\)", stated[0]))


def test_every_role_has_meta():
    assert len(ROLE_METAS) == len(glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "main.yml"))) >= 5


@pytest.mark.parametrize("meta", ROLE_METAS, ids=lambda p: p.split(os.sep)[-3])
def test_role_platforms_are_the_pinned_images_oses(meta):
    wanted = {(name, codename) for name, _, codename in _pinned_platforms()}
    assert _meta_platforms(meta) == wanted


def test_docs_state_the_pinned_images_oses():
    assert _documented_platforms() == _pinned_platforms()
