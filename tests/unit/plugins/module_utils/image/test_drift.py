import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.drift import check_node, compare_node
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import VerificationError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing
from tests.unit.plugins.module_utils.image.image_factory import PACKAGES, RELEASE, make_image, public_pem

NODE_TEXT = "".join("%s\t%s\t%s\n" % (p["name"], p["version"], p["arch"]) for p in PACKAGES)
RELEASE_TEXT = "".join('%s="%s"\n' % kv for kv in RELEASE.items())


def test_clean_node_has_no_drift(tmp_path):
    manifest, key = make_image(tmp_path)
    report = check_node(manifest, None, public_pem(key), "k", NODE_TEXT, RELEASE_TEXT, ["fio", "iperf3"], "n1")
    assert report["drifted"] is False and report["count"] == 0 and report["build_id"] == RELEASE["BUILD_ID"]


def test_reports_every_kind_of_drift(tmp_path):
    manifest, key = make_image(tmp_path)
    text = NODE_TEXT.replace("3.33-3", "3.35-1").replace("iperf3\t3.12-1+deb12u2\tamd64\n", "") + "vim\t2:9.0\tamd64\n"
    release = RELEASE_TEXT.replace(RELEASE["BUILD_ID"], "lab-docker-other")
    report = check_node(manifest, None, public_pem(key), "k", text, release, ["fio"], "n1")
    assert report["drifted"] and report["count"] == 5
    assert report["packages"]["changed"] == [{"package": "fio", "expected": "3.33-3", "actual": "3.35-1"}]
    assert report["packages"]["removed"] == [{"package": "iperf3", "version": "3.12-1+deb12u2"}]
    assert report["packages"]["added"] == [{"package": "vim", "version": "2:9.0"}]
    assert report["release"][0]["key"] == "BUILD_ID" and report["unheld_pins"] == ["iperf3"]


def test_held_check_is_skipped_when_not_collected():
    manifest = {"packages": PACKAGES, "release": RELEASE, "pins": {"requested": {"fio": "3.33-3"}},
                "version": "lab", "build_id": "b"}
    assert compare_node(manifest, PACKAGES, RELEASE, None)["unheld_pins"] == []


def test_drift_refuses_a_manifest_signed_by_another_key(tmp_path):
    manifest, key = make_image(tmp_path)
    with pytest.raises(VerificationError, match="not by the trusted key"):
        check_node(manifest, None, public_pem(signing.generate_key("ed25519")), "k", NODE_TEXT, RELEASE_TEXT, None, "n")
    with pytest.raises(VerificationError, match="Cannot read the signature"):
        check_node(manifest, str(tmp_path / "none.sig"), public_pem(key), "k", NODE_TEXT, RELEASE_TEXT, None, "n")
