"""The image catalogue: where the signed image of a version is, for recycles of another version.

The variable files name the current image (``gpufleet_image_version``, ``gpufleet_image_url``,
``gpufleet_image_manifest``). A rollout installs other versions, so the catalogue is two
templates in the same files, with ``{version}`` where the version goes:

    gpufleet_image_manifest_template: /srv/images/{version}/manifest.json
    gpufleet_image_url_template: https://media.example/{version}/{version}.rootfs.tar.gz

(``gpufleet lab up`` writes the lab's: ``gpufleet lab publish --version V`` puts an image
there.) ``resolve`` only fills the templates: every imaging run verifies the manifest's
signature and the artifact again (``image_verify`` in playbooks/tasks/image.yml), so the
controller's pass never hashes an image. ``verify`` (``gpufleet refresh start``) checks that
the version is published and signed before a rollout is recorded.
"""
from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError

from gpufleet.controller.errors import ControllerError

__all__ = ["Catalogue", "MANIFEST_TEMPLATE", "URL_TEMPLATE", "pool_versions"]

MANIFEST_TEMPLATE = "gpufleet_image_manifest_template"
URL_TEMPLATE = "gpufleet_image_url_template"


class Catalogue:
    """Image versions -> the playbook variables that install them; ``variables``: the merged
    variable files."""

    def __init__(self, variables):
        self.variables = dict(variables or {})

    def _template(self, key, version):
        template = self.variables.get(key)
        if not template or "{version}" not in str(template):
            raise ControllerError(
                "No image catalogue: the variable files have no %s with {version} in it, so image version %s "
                "cannot be located. Set %s and %s (docs/day2.md, 'Refresh'); the lab's vars.yml has them "
                "after `gpufleet lab up`." % (key, version, MANIFEST_TEMPLATE, URL_TEMPLATE), field=key)
        return str(template).replace("{version}", version)

    def resolve(self, version):
        """The image variables of ``version`` for a playbook run (raises ControllerError)."""
        if not version or "/" in version or version.startswith("."):
            raise ControllerError("Image version %r is not a version name; give one such as 2026.06.2." % version,
                                  field="version")
        return {"gpufleet_image_version": version,
                "gpufleet_image_manifest": self._template(MANIFEST_TEMPLATE, version),
                "gpufleet_image_url": self._template(URL_TEMPLATE, version)}

    def verify(self, version, verify_image):
        """The verified summary of ``version`` (its signature, artifact digest and version), or a
        ControllerError naming the fix. ``verify_image(manifest, key_pem, expected_version=,
        key_where=)`` is the collection's image verification."""
        image = self.resolve(version)
        key_path = self.variables.get("gpufleet_image_public_key")
        if not key_path:
            raise ControllerError("No trusted image key: gpufleet_image_public_key is not set in the variable "
                                  "files; set it to the public key images are signed with.",
                                  field="gpufleet_image_public_key")
        try:
            with open(key_path, "rb") as handle:
                key = handle.read()
        except OSError as exc:
            raise ControllerError("Cannot read the trusted image key %s: %s. Fix gpufleet_image_public_key."
                                  % (key_path, exc.strerror or exc), field="gpufleet_image_public_key")
        try:
            return verify_image(image["gpufleet_image_manifest"], key, expected_version=version,
                                key_where=key_path)
        except GpufleetError as exc:   # ImageError and its family: say what to do
            raise ControllerError(
                "Image version %s is not published and signed: %s Publish it first (lab: `gpufleet lab publish "
                "--version %s`; a site: build and sign it with `gpufleet image build` / `gpufleet image sign` and "
                "put manifest.json, its .sig and the artifact where %s points)."
                % (version, getattr(exc, "msg", str(exc)), version, MANIFEST_TEMPLATE), version=version)


def pool_versions(rollout_rows):
    """{pool: the image version its last finished rollout left} from the ledger's rollout rows
    (oldest first): ``done`` -> its new version, ``rolled_back`` -> the one it left.

    A pool whose latest rollout is still under way is left out (the rollout moves its nodes;
    both versions are in service meanwhile), and so is a pool that never had one: its version
    is whatever the variable files install, and the controller compares nothing (a spelling
    difference between the files and the ledger must never send a fleet to reimage)."""
    latest = {row["pool"]: row for row in rollout_rows}   # oldest first: a pool's last row wins
    left = {"done": "to_version", "rolled_back": "from_version"}   # the version each end leaves
    return {pool: row[left[row["phase"]]] for pool, row in latest.items() if row["phase"] in left}
