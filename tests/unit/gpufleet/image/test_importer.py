import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import ImageError, VerificationError
from gpufleet.image.importer import import_verified
from tests.unit.plugins.module_utils.image.image_factory import make_image, public_pem


def test_imports_only_after_verification_with_provenance_labels(tmp_path):
    manifest, key = make_image(tmp_path)
    calls = []
    summary = import_verified(manifest, public_pem(key), "gpufleet/node:lab",
                              run=lambda argv: calls.append(argv) or (0, "sha256:abc\n", ""))
    assert summary["image_id"] == "sha256:abc" and summary["tag"] == "gpufleet/node:lab"
    argv = calls[0]
    assert argv[:2] == ["docker", "import"] and argv[-1] == "gpufleet/node:lab"
    assert "LABEL org.gpufleet.image.build-id=lab-docker-0123456789ab" in argv


def test_tampered_artifact_never_reaches_docker(tmp_path):
    manifest, key = make_image(tmp_path)
    (tmp_path / "lab.rootfs.tar.gz").write_bytes(b"evil")
    calls = []
    with pytest.raises(VerificationError, match="was altered"):
        import_verified(manifest, public_pem(key), "t", run=calls.append)
    assert calls == []


def test_docker_failure_is_reported(tmp_path):
    manifest, key = make_image(tmp_path)
    with pytest.raises(ImageError, match="docker import .* failed \\(rc=1\\): Cannot connect"):
        import_verified(manifest, public_pem(key), "t", run=lambda argv: (1, "", "Cannot connect to the daemon"))


def test_default_tag_is_gpufleet_node_version(tmp_path):
    manifest, key = make_image(tmp_path)
    summary = import_verified(manifest, public_pem(key), run=lambda argv: (0, "sha256:abc\n", ""))
    assert summary["tag"] == "gpufleet/node:lab"
