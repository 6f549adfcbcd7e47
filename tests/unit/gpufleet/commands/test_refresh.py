"""`gpufleet refresh`: start only a published, signed version; status, halt, resume, rollback."""
import os

import pytest
import yaml

from gpufleet.commands.refresh import from_version
from gpufleet.controller import records
from gpufleet.controller.errors import ControllerError
from gpufleet.main import main
from tests.unit.plugins.module_utils.image.image_factory import make_image, public_pem
from tests.unit.gpufleet.inventory_once import shipped_inventory_once  # noqa: F401 (an autouse fixture)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
TO_JOINED = ("enrolled", "inspected", "imaging", "configuring", "validating", "ready", "joined")


@pytest.fixture
def site(tmp_path):
    """Images v1 and v2 published and signed under tmp/images/<version>, the variable file naming
    the catalogue, and a ledger with two lab nodes joined on v1."""
    key = None
    for version in ("v1", "v2"):
        folder = tmp_path / "images" / version
        folder.mkdir(parents=True)
        _path, key = make_image(folder, key=key, version=version)
    (tmp_path / "key.pem").write_bytes(public_pem(key))
    (tmp_path / "unsigned").mkdir()
    make_image(tmp_path / "unsigned", key=key, sign=False, version="v9")
    os.rename(str(tmp_path / "unsigned"), str(tmp_path / "images" / "v9"))
    variables = {"gpufleet_image_version": "v1", "gpufleet_image_public_key": str(tmp_path / "key.pem"),
                 "gpufleet_image_manifest_template": str(tmp_path / "images" / "{version}" / "manifest.json"),
                 "gpufleet_image_url_template": "https://media.example/{version}.tgz",
                 "gpufleet_gate_profile_dir": os.path.join(ROOT, "lab", "profiles", "gate")}
    (tmp_path / "vars.yml").write_text(yaml.safe_dump(variables))
    led = records.open_ledger(str(tmp_path / "ledger.sqlite"))
    for node in ("lab-r1n1", "lab-r1n2"):
        for target in TO_JOINED:
            led.transition(node, target, "test", "setup", image_version="v1")
    yield tmp_path, led
    led.close()


def argv(tmp_path, command, *extra):
    return ["refresh", command, "--policy", os.path.join(ROOT, "lab", "config", "capacity.yml"),
            "-i", os.path.join(ROOT, "inventories", "lab.rack.yml"), "-e", str(tmp_path / "vars.yml"),
            "--ledger", str(tmp_path / "ledger.sqlite"), "--who", "alice"] + list(extra)


def test_start_records_a_rollout_from_the_pools_version(site, capsys):
    tmp_path, led = site
    assert main(argv(tmp_path, "start", "--pool", "lab", "--image-version", "v2")) == 0
    out = capsys.readouterr().out
    assert "rollout 1: pool lab v1 -> v2" in out and "image_v1 and image_v2" in out, out
    row, = records.rollouts(led)
    assert (row["from_version"], row["to_version"], row["phase"], row["who"]) == ("v1", "v2", "canary", "alice")
    assert main(argv(tmp_path, "start", "--pool", "lab", "--image-version", "v2")) == 1
    assert "already has rollout 1" in capsys.readouterr().err


@pytest.mark.parametrize("version,words", [
    ("v3", ["not published and signed", "gpufleet lab publish --version v3"]),
    ("v9", ["unsigned"]),
    ("../v2", ["not a version name"]),
])
def test_start_refuses_a_version_that_is_not_published_and_signed(site, capsys, version, words):
    tmp_path, led = site
    assert main(argv(tmp_path, "start", "--pool", "lab", "--image-version", version)) == 1
    err = capsys.readouterr().err
    assert all(w in err for w in words), err
    assert records.rollouts(led) == []


def test_start_refuses_without_a_catalogue_naming_the_variables(site, capsys):
    tmp_path, led = site
    variables = yaml.safe_load((tmp_path / "vars.yml").read_text())
    del variables["gpufleet_image_manifest_template"]
    (tmp_path / "vars.yml").write_text(yaml.safe_dump(variables))
    assert main(argv(tmp_path, "start", "--pool", "lab", "--image-version", "v2")) == 1
    assert "gpufleet_image_manifest_template" in capsys.readouterr().err


@pytest.mark.parametrize("extra,words", [
    (["--pool", "nope", "--image-version", "v2"], "not in the policy"),
    (["--pool", "lab", "--image-version", "v1"], "already runs v1"),
    (["--pool", "lab", "--image-version", "v2", "--gate-profile", "h999"], "Gate profile 'h999'"),
])
def test_start_refusals(site, capsys, extra, words):
    tmp_path, led = site
    assert main(argv(tmp_path, "start", *extra)) == 1
    assert words in capsys.readouterr().err
    assert records.rollouts(led) == []


def test_a_gate_profile_rollout_on_the_same_image_is_allowed(site, capsys):
    tmp_path, led = site
    assert main(argv(tmp_path, "start", "--pool", "lab", "--image-version", "v1", "--gate-profile", "lab")) == 0
    assert records.rollouts(led)[0]["gate_profile"] == "lab"


def test_halt_resume_rollback_and_status(site, capsys):
    tmp_path, led = site
    assert main(argv(tmp_path, "start", "--pool", "lab", "--image-version", "v2")) == 0
    assert main(argv(tmp_path, "halt", "--pool", "lab", "--reason", "driver bug")) == 0
    assert records.rollouts(led)[0]["phase"] == "halted"
    assert records.rollouts(led)[0]["reason"] == "halt by alice: driver bug"
    assert main(argv(tmp_path, "resume", "--pool", "lab")) == 0
    assert records.rollouts(led)[0]["phase"] == "canary"
    assert main(argv(tmp_path, "rollback", "--pool", "lab")) == 0
    assert records.rollouts(led)[0]["phase"] == "rolling_back"
    capsys.readouterr()
    assert main(argv(tmp_path, "halt", "--pool", "lab")) == 1
    assert "is rolling_back; halt applies to a rollout that is canary or batches" in capsys.readouterr().err
    assert main(argv(tmp_path, "status")) == 0
    out = capsys.readouterr().out
    assert out.startswith("rollout 1 pool lab: v1 -> v2, phase rolling_back") and "canaries: none yet" in out


def test_halt_without_a_rollout_says_so(site, capsys):
    tmp_path, _led = site
    assert main(argv(tmp_path, "halt", "--pool", "lab")) == 1
    assert "no rollout in progress" in capsys.readouterr().err


def test_several_versions_in_service_are_refused():
    with pytest.raises(ControllerError, match="runs several image versions now"):
        from_version({"v1": 3, "v2": 1}, "lab", "v1")
    assert from_version({}, "lab", "v1") == "v1"
    with pytest.raises(ControllerError, match="gpufleet_image_version"):
        from_version({}, "lab", None)
