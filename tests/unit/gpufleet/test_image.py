"""The `gpufleet image` command: argument wiring and results (no Packer, no docker)."""
import json

from gpufleet.main import main
from tests.unit.plugins.module_utils.image.image_factory import make_image


def test_list_shows_every_version(capsys):
    assert main(["image", "list"]) == 0
    out = capsys.readouterr().out
    assert "lab" in out and "2026.03.1" in out and "2026.09.1" in out


def test_validate_pins_only(capsys):
    assert main(["image", "validate", "--pins-only"]) == 0
    assert capsys.readouterr().out.count("pins ok:") >= 3


def test_unknown_version_is_one_clear_line(capsys):
    assert main(["image", "validate", "--pins-only", "1999.01.1"]) == 1
    assert "has no pin file" in capsys.readouterr().err


def test_keygen_sign_verify_and_refuse_tamper(capsys, tmp_path):
    key = str(tmp_path / "org.key")
    assert main(["image", "keygen", "--out", key, "--algorithm", "ecdsa-p256"]) == 0
    assert main(["image", "keygen", "--out", key]) == 1
    manifest = make_image(tmp_path)[0]
    # Re-sign the lab-signed manifest with the organisation's key, then trust only that key.
    assert main(["image", "sign", manifest, "--key", key]) == 0
    assert main(["image", "verify", manifest, "--public-key", str(tmp_path / "org.pub")]) == 0
    out = capsys.readouterr().out
    assert json.loads(out.split("verified: ", 1)[1])["version"] == "lab"
    (tmp_path / "lab.rootfs.tar.gz").write_bytes(b"evil")
    assert main(["image", "verify", manifest, "--public-key", str(tmp_path / "org.pub")]) == 1
    assert "was altered" in capsys.readouterr().err


def test_show_prints_manifest_facts(capsys, tmp_path):
    manifest = make_image(tmp_path)[0]
    assert main(["image", "show", manifest]) == 0
    view = json.loads(capsys.readouterr().out)
    assert view["build_id"] == "lab-docker-0123456789ab" and view["package_count"] == 3


def test_build_without_key_explains_how_to_get_one(capsys, tmp_path):
    assert main(["image", "build", "lab", "--key", str(tmp_path / "none.key")]) == 1
    assert "--generate-key" in capsys.readouterr().err


def test_missing_manifest_is_a_clear_error_not_a_traceback(capsys, tmp_path):
    assert main(["image", "show", str(tmp_path / "none.json")]) == 1
    assert "Cannot read" in capsys.readouterr().err


def test_missing_public_half_is_recreated(capsys, tmp_path):
    key = str(tmp_path / "k.key")
    assert main(["image", "keygen", "--out", key]) == 0
    pub = (tmp_path / "k.pub").read_bytes()
    (tmp_path / "k.pub").unlink()
    from gpufleet.commands import image as image_cmd
    image_cmd._load_or_create_key(key, False, "ed25519")  # pylint: disable=protected-access
    assert (tmp_path / "k.pub").read_bytes() == pub


def test_diff_reports_identical_and_differing_tarballs(capsys, tmp_path):
    from tests.unit.plugins.module_utils.image.image_factory import write_tarball
    write_tarball(str(tmp_path / "a.tgz"), {"etc/a": b"1"})
    write_tarball(str(tmp_path / "b.tgz"), {"etc/a": b"2"})
    assert main(["image", "diff", str(tmp_path / "a.tgz"), str(tmp_path / "a.tgz")]) == 0
    assert json.loads(capsys.readouterr().out) == {"count": 0, "paths": [], "identical_sha256": True}
    assert main(["image", "diff", str(tmp_path / "a.tgz"), str(tmp_path / "b.tgz")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["identical_sha256"] is False and report["paths"] == [{"path": "etc/a", "differs": ["content"]}]
