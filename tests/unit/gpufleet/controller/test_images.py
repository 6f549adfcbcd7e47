"""The image catalogue: a version's variables from the templates; verify before a rollout."""
import pytest

from gpufleet.controller.errors import ControllerError
from gpufleet.controller.images import Catalogue

TEMPLATES = {"gpufleet_image_manifest_template": "/srv/{version}/manifest.json",
             "gpufleet_image_url_template": "https://m/{version}/{version}.tgz"}


def test_resolve_fills_both_templates():
    assert Catalogue(TEMPLATES).resolve("2026.07.1") == {
        "gpufleet_image_version": "2026.07.1", "gpufleet_image_manifest": "/srv/2026.07.1/manifest.json",
        "gpufleet_image_url": "https://m/2026.07.1/2026.07.1.tgz"}


@pytest.mark.parametrize("variables,version,words", [
    ({}, "v2", "gpufleet_image_manifest_template"),
    (dict(TEMPLATES, gpufleet_image_url_template="https://m/fixed.tgz"), "v2", "gpufleet_image_url_template"),
    (TEMPLATES, "", "not a version name"),
    (TEMPLATES, "../etc", "not a version name"),
])
def test_resolve_refuses_with_the_fix(variables, version, words):
    with pytest.raises(ControllerError, match=words):
        Catalogue(variables).resolve(version)


def test_verify_needs_the_trusted_key():
    with pytest.raises(ControllerError, match="gpufleet_image_public_key is not set"):
        Catalogue(TEMPLATES).verify("v2", lambda *a, **k: {})


def test_the_pool_version_is_what_its_last_finished_rollout_left():
    from gpufleet.controller.images import pool_versions
    rows = [{"pool": "a", "phase": "done", "from_version": "v1", "to_version": "v2"},
            {"pool": "a", "phase": "rolled_back", "from_version": "v2", "to_version": "v3"},
            {"pool": "b", "phase": "done", "from_version": "v1", "to_version": "v2"},
            {"pool": "b", "phase": "batches", "from_version": "v2", "to_version": "v3"},
            {"pool": "c", "phase": "done", "from_version": "v4", "to_version": "v5"}]
    # a: rolled back to v2; b: a rollout under way, nothing compared; c: done at v5
    assert pool_versions(rows) == {"a": "v2", "c": "v5"}
    assert pool_versions([]) == {}
