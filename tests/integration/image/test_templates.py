"""Every image version x builder passes `packer validate`; templates pass `packer fmt -check`.

Runs the real Packer (Debian's 1.6.6 on CI). The qemu source is validated against a
local stand-in disk image because its pinned cloud-image URL and checksum file are not
reachable from CI; the template, variables and pin values are the real ones.
"""
import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.artifact import sha256_file
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.manifest import canonical_json
from gpufleet.image.packer import BUILDERS, Packer
from gpufleet.image.pins import list_versions, load_pins, render_pkrvars
from tests.helpers import ROOT, need_tool

pytestmark = [pytest.mark.integration, pytest.mark.sanity]

PACKER_DIR = os.path.join(ROOT, "packer")
VERSIONS = list_versions(os.path.join(PACKER_DIR, "versions"))


@pytest.fixture(scope="module")
def packer():
    need_tool("packer")
    return Packer(PACKER_DIR)


def test_templates_are_packer_fmt_clean(packer):
    packer.fmt_check()


@pytest.mark.parametrize("builder", BUILDERS)
@pytest.mark.parametrize("version", VERSIONS)
def test_version_validates_with_builder(packer, tmp_path, version, builder):
    pins = load_pins(os.path.join(PACKER_DIR, "versions"), version)
    var_file = tmp_path / ("%s.pkrvars.json" % version)
    var_file.write_bytes(canonical_json(render_pkrvars(pins, "%s-%s-validate" % (version, builder), str(tmp_path))))
    extra = {}
    if builder == "qemu":
        disk = tmp_path / "standin.qcow2"
        disk.write_bytes(b"\0" * 4096)
        extra = {"disk_image_url": "file://%s" % disk, "disk_image_checksum": "sha256:" + sha256_file(str(disk))}
    packer.validate(builder, str(var_file), extra)


def test_validate_rejects_a_broken_pin_value(packer, tmp_path):
    # The check is not a rubber stamp: a wrong variable type fails validation.
    pins = load_pins(os.path.join(PACKER_DIR, "versions"), "lab")
    rendered = render_pkrvars(pins, "x", str(tmp_path))
    rendered["packages"] = ["not", "a", "map"]
    var_file = tmp_path / "bad.pkrvars.json"
    var_file.write_bytes(canonical_json(rendered))
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import PackerError
    with pytest.raises(PackerError, match="is invalid for builder docker"):
        packer.validate("docker", str(var_file))
