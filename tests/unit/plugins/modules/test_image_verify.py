import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing
from ansible_collections.gpufleet.baremetal.plugins.modules import image_verify
from tests.unit.plugins.module_utils.image.image_factory import RELEASE, make_image, public_pem


def run(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit) as exited:
        image_verify.main()
    return json.loads(capsys.readouterr().out), exited.value.code


def test_verified_image_returns_attestation_values_and_never_changes(capsys, tmp_path):
    manifest, key = make_image(tmp_path)
    (tmp_path / "k.pub").write_bytes(public_pem(key))
    result, code = run(capsys, manifest=manifest, public_key=str(tmp_path / "k.pub"), expected_version="lab",
                       _ansible_check_mode=True)
    assert code == 0 and result["changed"] is False
    assert result["release"]["BUILD_ID"] == RELEASE["BUILD_ID"] and result["key_id"] == signing.key_id(key.public_key())


def test_tampered_artifact_fails_with_details(capsys, tmp_path):
    manifest, key = make_image(tmp_path)
    (tmp_path / "lab.rootfs.tar.gz").write_bytes(b"evil")
    result, code = run(capsys, manifest=manifest, public_key_content=public_pem(key).decode())
    assert code == 1 and result["failed"] and "was altered" in result["msg"]
    assert "expected_sha256" in result


def test_wrong_key_and_unsigned_fail(capsys, tmp_path):
    manifest, key = make_image(tmp_path, sign=False)
    result, code = run(capsys, manifest=manifest, public_key_content=public_pem(key).decode())
    assert code == 1 and "is unsigned" in result["msg"]
    manifest, key = make_image(tmp_path)
    other = public_pem(signing.generate_key("ecdsa-p256")).decode()
    result, code = run(capsys, manifest=manifest, public_key_content=other)
    assert code == 1 and "not by the trusted key" in result["msg"]


def test_argspec_requires_exactly_one_key_source(capsys, tmp_path):
    result, code = run(capsys, manifest="/m.json")
    assert code == 1 and "one of the following is required: public_key, public_key_content" in result["msg"]
    result, code = run(capsys, manifest="/m.json", public_key="/k", public_key_content="x")
    assert code == 1 and "mutually exclusive" in result["msg"]
    result, code = run(capsys, manifest="/m.json", public_key=str(tmp_path / "missing.pub"))
    assert code == 1 and "Cannot read the public key" in result["msg"]
