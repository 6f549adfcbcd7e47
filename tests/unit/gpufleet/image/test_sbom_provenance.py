from gpufleet.image.provenance import (
    PREDICATE_TYPE, STATEMENT_TYPE, provenance_statement)
from gpufleet.image.sbom import spdx_document

PACKAGES = [{"name": "openssh-client", "version": "1:9.2p1-2+deb12u10", "arch": "amd64"}]


def test_spdx_document_is_deterministic_with_escaped_purls():
    doc = spdx_document("lab", "lab-docker-abc", "lab.rootfs.tar.gz", PACKAGES, "debian", "12", 0)
    assert doc == spdx_document("lab", "lab-docker-abc", "lab.rootfs.tar.gz", PACKAGES, "debian", "12", 0)
    assert doc["creationInfo"]["created"] == "1970-01-01T00:00:00Z"
    assert doc["documentNamespace"].endswith("/lab-docker-abc")
    pkg = doc["packages"][1]
    assert pkg["SPDXID"] == "SPDXRef-Package-deb-openssh-client-1-9.2p1-2-deb12u10"
    assert pkg["externalRefs"][0]["referenceLocator"] == \
        "pkg:deb/debian/openssh-client@1%3A9.2p1-2%2Bdeb12u10?arch=amd64&distro=debian-12"
    assert {"spdxElementId": "SPDXRef-Image", "relationshipType": "CONTAINS",
            "relatedSpdxElement": pkg["SPDXID"]} in doc["relationships"]


def test_provenance_statement_binds_artifact_and_inputs():
    statement = provenance_statement(
        {"name": "lab.rootfs.tar.gz", "sha256": "a" * 64},
        {"version": "lab", "builder": "docker", "build_id": "lab-docker-abc", "started": 0, "finished": 61,
         "packer_version": "1.6.6"},
        [{"uri": "file:packer/versions/lab.yml", "sha256": "b" * 64}], "https://builder.invalid")
    assert statement["_type"] == STATEMENT_TYPE and statement["predicateType"] == PREDICATE_TYPE
    assert statement["subject"] == [{"name": "lab.rootfs.tar.gz", "digest": {"sha256": "a" * 64}}]
    definition = statement["predicate"]["buildDefinition"]
    assert definition["resolvedDependencies"] == [{"uri": "file:packer/versions/lab.yml", "digest": {"sha256": "b" * 64}}]
    run = statement["predicate"]["runDetails"]
    assert run["metadata"] == {"invocationId": "lab-docker-abc", "startedOn": "1970-01-01T00:00:00Z",
                               "finishedOn": "1970-01-01T00:01:01Z"}
