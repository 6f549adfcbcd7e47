"""Unit tests of the lab (lab/twin): config, node manager, installer refusal, fault models.

No docker, no socket: docker is a recording fake, HTTP is a fake session.
"""
import json
import os

import pytest

from tests.helpers import ROOT

from lab.twin import config as lab_config
from lab.twin import lab as lab_mod
from lab.twin.errors import LabError
from lab.twin.media import Installer
from lab.twin.nodes import NodeManager, NodeStore


class FakeDocker:
    LABEL = "gpufleet-lab=1"

    def __init__(self, images=(), containers=None):
        self.calls = []
        self.images = set(images)
        self.containers = dict(containers or {})  # name -> [image, running]

    def __call__(self, *args, check=True, **kwargs):
        self.calls.append(args)
        if args[0] == "run":
            name = args[args.index("--name") + 1]
            self.containers[name] = [args[-3], True]
        elif args[0] == "start":
            self.containers[args[1]][1] = True
        elif args[0] == "kill":
            self.containers[args[-1]][1] = False
        elif args[:2] == ("rm", "-f"):
            self.containers.pop(args[2], None)

    def exists(self, kind, name):
        return name in self.images

    def running(self, name):
        return self.containers.get(name, [None, False])[1]

    def image_of(self, name):
        return self.containers.get(name, [""])[0]


class FakeInstaller:
    def __init__(self, refuse=False):
        self.refuse = refuse
        self.installs = []

    def install(self, node, media):
        self.installs.append((node, media))
        if self.refuse:
            raise LabError("signature does not verify")
        return {"disk": "gpufleet-lab-disk:sha256-abc", "version": "lab", "artifact_sha256": "abc" * 20}


@pytest.fixture
def cfg(tmp_path):
    return lab_config.load(None, state_dir=str(tmp_path / "lab"))


def manager(cfg, docker, installer, boot):
    return NodeManager(cfg, docker, installer, lambda node: dict(boot), NodeStore(cfg.path("nodes")))


def test_default_config_matches_the_lab_inventory(cfg):
    assert [n.name for n in cfg.nodes][:2] == ["lab-r1n1", "lab-r1n2"] and len(cfg.nodes) == 8
    assert cfg.node("lab-r2n4").bmc_url == "https://127.0.20.2:8443"
    assert cfg.container("lab-r1n1") == "gpufleet-lab-lab-r1n1"
    assert cfg.media_url("lab") == "http://127.0.20.250:8701/lab/lab.rootfs.tar.gz"


def test_the_bmcs_get_the_configured_power_delay_or_the_twins_default(cfg, tmp_path):
    assert lab_mod.bmc_config(cfg)["power_delay"] == [1, 4]          # lab/config/default.yml
    bare = lab_config.load(None, state_dir=str(tmp_path),
                           bmc={"address_pattern": "127.0.20.{rack}", "port": 8443, "username": "admin"})
    assert lab_mod.bmc_config(bare)["power_delay"] == list(lab_mod.DEFAULT_POWER_DELAY)


def test_bmc_layer_scales_to_1000_systems(tmp_path):
    big = lab_config.load(None, state_dir=str(tmp_path), racks=10, nodes_per_rack=100)
    assert len(big.nodes) == 1000
    racks = lab_mod.bmc_config(big)["racks"]
    assert len(racks) == 10 and racks[9]["address"] == "127.0.20.10" and len(racks[9]["nodes"]) == 100


@pytest.mark.parametrize("override,fragment", [
    ({"racks": 0}, "racks must be"),
    ({"manager": {"address": "127.0.0.1", "hook_port": 1, "artifact_port": 2, "images_root": "x",
                  "image_public_key": "k"}}, "outside the lab's loopback range"),
    # CI found this one: the message named the rack, not the key to fix
    ({"bmc": {"address_pattern": "0", "port": 8443, "username": "admin", "firmware": {}}},
     "bmc.address_pattern (rack 1) '0' is not an IP address"),
    ({"bmc": {"address_pattern": "127.0.20.{rack}", "port": 8443, "username": "admin", "power_delay": [5, 1]}},
     "bmc.power_delay is [5, 1], not a range [low, high] of seconds"),
])
def test_bad_config_is_refused(tmp_path, override, fragment):
    with pytest.raises(LabError) as err:
        lab_config.load(None, state_dir=str(tmp_path), **override)
    assert fragment in err.value.msg


def test_power_on_with_cd_and_media_images_then_boots_the_disk(cfg):
    docker, installer = FakeDocker(), FakeInstaller()
    mgr = manager(cfg, docker, installer, {"target": "Cd", "enabled": "Disabled"})
    mgr.handle({"event": "vmedia_inserted", "name": "lab-r1n1", "image": "http://x/lab/lab.rootfs.tar.gz"})
    record = mgr.handle({"event": "power_on", "name": "lab-r1n1"})
    assert record["disk"] == "gpufleet-lab-disk:sha256-abc" and record["version"] == "lab"
    run = docker.calls[-1]
    assert run[0] == "run" and "gpufleet-lab-lab-r1n1" in run and "--privileged" not in run
    assert any(a.endswith(":/opt/gpufleet-lab-hwsim:ro") for a in run)
    mgr.handle({"event": "power_off", "name": "lab-r1n1"})
    assert docker.calls[-1][0] == "kill"
    mgr.handle({"event": "power_on", "name": "lab-r1n1"})  # same insertion: no second install
    assert len(installer.installs) == 1 and docker.calls[-1] == ("start", "gpufleet-lab-lab-r1n1")


def test_refused_artifact_leaves_the_node_without_a_disk(cfg):
    docker = FakeDocker()
    mgr = manager(cfg, docker, FakeInstaller(refuse=True), {"target": "Cd", "enabled": "Once"})
    mgr.handle({"event": "vmedia_inserted", "name": "lab-r1n2", "image": "http://x/bad.tar.gz"})
    record = mgr.handle({"event": "power_on", "name": "lab-r1n2"})
    assert record["disk"] is None and "signature does not verify" in record["last_error"]
    assert not docker.calls
    console = open(cfg.path("nodes", "lab-r1n2.console")).read()
    assert "INSTALL REFUSED" in console


def test_reimage_replaces_the_container(cfg):
    docker = FakeDocker(containers={"gpufleet-lab-lab-r1n1": ["gpufleet-lab-disk:old", False]})
    mgr = manager(cfg, docker, FakeInstaller(), {"target": "Cd", "enabled": "Once"})
    mgr.handle({"event": "vmedia_inserted", "name": "lab-r1n1", "image": "http://x/lab.rootfs.tar.gz"})
    mgr.handle({"event": "power_on", "name": "lab-r1n1"})
    assert ("rm", "-f", "gpufleet-lab-lab-r1n1") in docker.calls and docker.calls[-1][0] == "run"


def test_reimage_with_the_same_image_still_gives_a_fresh_root_filesystem(cfg):
    docker = FakeDocker(containers={"gpufleet-lab-lab-r1n1": ["gpufleet-lab-disk:sha256-abc", True]})
    mgr = manager(cfg, docker, FakeInstaller(), {"target": "Cd", "enabled": "Once"})
    mgr.handle({"event": "vmedia_inserted", "name": "lab-r1n1", "image": "http://x/lab.rootfs.tar.gz"})
    mgr.handle({"event": "power_on", "name": "lab-r1n1"})
    assert ("rm", "-f", "gpufleet-lab-lab-r1n1") in docker.calls and docker.calls[-1][0] == "run"
    docker.calls.clear()
    mgr.handle({"event": "power_on", "name": "lab-r1n1"})  # a plain reboot keeps the disk's contents
    assert docker.calls == [("start", "gpufleet-lab-lab-r1n1")]


def test_hdd_boot_without_disk_halts(cfg):
    docker = FakeDocker()
    record = manager(cfg, docker, FakeInstaller(), {"target": "Hdd", "enabled": "Continuous"}).handle(
        {"event": "power_on", "name": "lab-r2n1"})
    assert record["disk"] is None and not docker.calls


@pytest.mark.parametrize("event", [{"event": "power_on"}, {"event": "reboot", "name": "lab-r1n1"},
                                   {"event": "power_on", "name": "not-a-node"}])
def test_unusable_events_are_refused(cfg, event):
    with pytest.raises(LabError):
        manager(cfg, FakeDocker(), FakeInstaller(), {}).handle(event)


class FakeHttp:
    """The artifact server, behind the deploy agent's Fetcher (its opener hook)."""

    def __init__(self, files):
        self.files = files

    def __call__(self, url):
        import io
        import urllib.error
        name = url.rsplit("/", 1)[-1]
        if name not in self.files:
            raise urllib.error.HTTPError(url, 404, "Not Found", {}, None)
        return io.BytesIO(self.files[name])


def _fetcher(files):
    from gpufleet.deploy.fetch import Fetcher
    return Fetcher(allow_http=True, opener=FakeHttp(files))


def test_installer_refuses_an_unsigned_artifact_before_docker(tmp_path):
    docker = FakeDocker()
    key = tmp_path / "lab.pub"
    key.write_text("not used: the signature is missing")
    fetcher = _fetcher({"manifest.json": b"{}", "lab.rootfs.tar.gz": b"data"})
    installer = Installer(docker, str(key), str(tmp_path / "media"), "gpufleet-lab-disk", fetcher=fetcher)
    with pytest.raises(LabError) as err:
        installer.install("lab-r1n1", "http://127.0.20.250:8701/lab/lab.rootfs.tar.gz")
    assert "manifest.json.sig" in err.value.msg and "HTTP 404" in err.value.msg
    assert not docker.calls


def test_installer_refuses_a_bad_signature(tmp_path):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing
    key = signing.generate_key("ed25519")
    pub = tmp_path / "lab.pub"
    pub.write_bytes(signing.public_pem(key.public_key()))
    fetcher = _fetcher({"manifest.json": b'{"version": "lab"}', "manifest.json.sig": b"garbage",
                        "lab.rootfs.tar.gz": b"data"})
    docker = FakeDocker()
    installer = Installer(docker, str(pub), str(tmp_path / "media"), "gpufleet-lab-disk", fetcher=fetcher)
    with pytest.raises(LabError) as err:
        installer.install("lab-r1n1", "http://127.0.20.250:8701/lab/lab.rootfs.tar.gz")
    assert "refused virtual media" in err.value.msg and not docker.calls
    assert not os.path.exists(tmp_path / "media" / "lab-r1n1")  # work files removed


def test_installer_verifies_the_signature_before_it_requests_the_artifact_then_imports_it(tmp_path):
    from tests.unit.plugins.module_utils.image.image_factory import make_image, public_pem
    built = tmp_path / "built"
    built.mkdir()
    manifest, key = make_image(built)
    files = {name: open(os.path.join(os.path.dirname(manifest), name), "rb").read()
             for name in os.listdir(os.path.dirname(manifest))}
    pub = tmp_path / "lab.pub"
    pub.write_bytes(public_pem(key))
    opener = FakeHttp(files)
    requested = []
    from gpufleet.deploy.fetch import Fetcher
    fetcher = Fetcher(allow_http=True, opener=lambda url: requested.append(url) or opener(url))
    docker = SlowImportDocker()
    installer = Installer(docker, str(pub), str(tmp_path / "media"), "gpufleet-lab-disk", fetcher=fetcher)
    record = installer.install("lab-r1n1", "http://127.0.20.250:8701/lab/lab.rootfs.tar.gz")
    assert [u.rsplit("/", 1)[1] for u in requested] == ["manifest.json", "manifest.json.sig", "lab.rootfs.tar.gz"]
    assert record["version"] == "lab" and docker.imports and docker.imports[0][0] == "import"
    # an altered artifact is refused after the download, before docker
    files["lab.rootfs.tar.gz"] = files["lab.rootfs.tar.gz"] + b"x"
    docker = SlowImportDocker()
    installer = Installer(docker, str(pub), str(tmp_path / "media"), "gpufleet-lab-disk", fetcher=fetcher)
    with pytest.raises(LabError, match="longer than"):
        installer.install("lab-r1n1", "http://127.0.20.250:8701/lab/lab.rootfs.tar.gz")
    assert not docker.imports


def test_fault_injection_rewrites_the_node_model(cfg):
    lab_mod.write_models(cfg)
    model = lab_mod.inject_fault(cfg, "lab-r1n3", "degraded_nvlink", gpu=2, factor=0.25)
    stored = json.load(open(cfg.path("hwsim", "lab-r1n3", "hwmodel.json")))
    assert stored == model and stored["faults"] == [{"gpu": 2, "factor": 0.25, "type": "degraded_nvlink"}]
    assert stored["node"] == "lab-r1n3"
    lab_mod.clear_faults(cfg, "lab-r1n3")
    assert json.load(open(cfg.path("hwsim", "lab-r1n3", "hwmodel.json")))["faults"] == []
    with pytest.raises(LabError):
        lab_mod.inject_fault(cfg, "lab-r1n3", "melted")


def test_a_gpu_fault_without_an_index_hits_gpu_0(cfg):
    # without it a faulty_gpu matched no GPU and the "faulty" node passed its gate (lab demo)
    from lab.hwsim.simtools.model import Model
    lab_mod.write_models(cfg)
    model = lab_mod.inject_fault(cfg, "lab-r1n3", "faulty_gpu")
    assert model["faults"] == [{"gpu": 0, "type": "faulty_gpu"}]
    assert Model(model).is_faulty(0) and not Model(model).is_faulty(1)
    with pytest.raises(LabError, match="--param gpu=N"):
        lab_mod.inject_fault(cfg, "lab-r1n3", "ecc", gpu="two")


def test_a_fabric_down_fault_holds_one_gpus_fabric_registration_and_the_cli_offers_every_fault(cfg):
    import argparse

    from lab import cli
    from lab.hwsim.simtools.model import Model
    lab_mod.write_models(cfg)
    model = lab_mod.inject_fault(cfg, "lab-r1n3", "fabric_down", gpu=5)
    assert model["faults"] == [{"gpu": 5, "type": "fabric_down"}]
    assert Model(model).fabric(5) == ("In Progress", "N/A") and Model(model).fabric(4) == ("Completed", "Success")
    parser = argparse.ArgumentParser()
    cli.register(parser)
    actions = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    fault_help = next(a.help for a in actions.choices["fault"]._actions if a.dest == "type")
    assert [t.strip() for t in fault_help.split(",")] == list(lab_mod.FAULT_TYPES)


class SlowImportDocker:
    """Docker whose ``import`` takes a while, as a 140 MB rootfs does."""

    def __init__(self):
        self.images, self.imports = set(), []

    def exists(self, kind, name):
        return name in self.images

    def __call__(self, *args, **kwargs):
        import time as _time
        self.imports.append(args)
        _time.sleep(0.05)
        self.images.add(args[-1])


def test_installer_imports_one_artifact_once_when_nodes_install_together(tmp_path):
    import threading
    docker = SlowImportDocker()
    installer = Installer(docker, "unused", str(tmp_path), "gpufleet-lab-disk")
    summary = {"artifact_sha256": "ab" * 32, "artifact": "/x/lab.rootfs.tar.gz", "version": "lab",
               "build_id": "b", "pins_sha256": "p"}
    threads = [threading.Thread(target=installer._disk_image, args=(summary,)) for _unused in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(docker.imports) == 1 and docker.imports[0][0] == "import"


def test_publish_imports_the_verified_image_once_so_no_install_waits_for_it(cfg, tmp_path):
    from tests.unit.plugins.module_utils.image.image_factory import make_image, public_pem
    (tmp_path / "images" / "lab").mkdir(parents=True)
    manifest, key = make_image(tmp_path / "images" / "lab")
    cfg.images_root, cfg.image_public_key = str(tmp_path / "images"), str(tmp_path / "lab.pub")
    (tmp_path / "lab.pub").write_bytes(public_pem(key))
    docker = SlowImportDocker()
    summary = lab_mod.publish_image(cfg, "lab", log=lambda line: None, docker=docker)
    assert [args[0] for args in docker.imports] == ["import"]
    assert docker.imports[0][-1] == "gpufleet-lab-disk:sha256-" + summary["artifact_sha256"][:20]
    assert os.path.isfile(os.path.join(cfg.artifacts_root, "lab", "manifest.json"))
    lab_mod.publish_image(cfg, "lab", log=lambda line: None, docker=docker)  # published again: no import
    assert len(docker.imports) == 1
    # an installer sharing that docker finds the disk: nothing imported at install time
    installer = Installer(docker, cfg.image_public_key, str(tmp_path / "media"), "gpufleet-lab-disk")
    assert installer._disk_image(summary) == docker.imports[0][-1] and len(docker.imports) == 1


def test_lab_down_kills_only_a_capacity_controller_left_running(tmp_path):
    import subprocess
    import sys
    # Each child says it is running before its pid is looked at: right after a spawn, Linux can
    # show an empty /proc/PID/cmdline (the exec has closed the spawn pipe but not yet set argv),
    # and kill_controller rightly leaves alone a process it cannot name.
    child = "import time; print('running', flush=True); time.sleep(60)"
    controller = subprocess.Popen([sys.executable, "-c", child, "controller", "run"], stdout=subprocess.PIPE)
    bystander = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE)
    try:
        assert controller.stdout.readline() == b"running\n" and bystander.stdout.readline() == b"running\n"
        for proc, name in ((controller, "controller.pid"), (bystander, "other.pid")):
            (tmp_path / name).write_text("%d\n" % proc.pid)
        assert lab_mod.kill_controller(str(tmp_path / "other.pid")) is None
        assert lab_mod.kill_controller(str(tmp_path / "controller.pid")) == controller.pid
        assert controller.wait(10) == -9 and bystander.poll() is None
        assert lab_mod.kill_controller(str(tmp_path / "missing.pid")) is None
    finally:
        for proc in (controller, bystander):
            proc.kill()
            proc.wait()
            proc.stdout.close()


def test_a_bmc_critical_fault_makes_that_nodes_bmc_report_critical_until_cleared(cfg):
    from lab.bmc import layer
    lab_mod.write_models(cfg)
    health_dir = lab_mod.bmc_config(cfg)["health_dir"]
    state = layer.LabState("r1", [{"uuid": "u1", "name": "lab-r1n3"}], None, [1, 1], health_dir=health_dir)

    def view(name):
        body = {"Name": name, "UUID": "u1", "Status": {"State": "Enabled", "Health": "OK"}}
        layer._system_view(None, state, body)
        return body["Status"]
    assert view("lab-r1n3")["Health"] == "OK"
    lab_mod.inject_fault(cfg, "lab-r1n3", "bmc_critical")
    assert view("lab-r1n3") == {"State": "Enabled", "Health": "Critical", "HealthRollup": "Critical"}
    assert view("lab-r1n4")["Health"] == "OK"
    model = json.load(open(cfg.path("hwsim", "lab-r1n3", "hwmodel.json")))
    assert model["faults"] == []            # the node itself is untouched
    lab_mod.clear_faults(cfg)
    assert view("lab-r1n3")["Health"] == "OK"


def test_an_ecc_or_slow_hca_fault_without_parameters_still_fails_a_gate(cfg):
    # without defaults an ecc fault counted no error and a slow_hca fault named no HCA: both
    # left the "faulty" node passing its gate
    from lab.hwsim.simtools.model import Model
    lab_mod.write_models(cfg)
    model = Model(lab_mod.inject_fault(cfg, "lab-r1n3", "ecc"))
    assert model.ecc(0) == {"corrected": 0, "uncorrected": 1} and model.ecc(1)["uncorrected"] == 0
    model = Model(lab_mod.inject_fault(cfg, "lab-r1n2", "slow_hca"))
    first = model.data["hcas"][0]["name"]
    assert [h["bw_gbps"] for h in model.hcas() if h["name"] == first] == [50.0]
    assert model.hca_factor() < 1.0
    assert lab_mod.inject_fault(cfg, "lab-r2n1", "ecc", corrected=5)["faults"] == [
        {"gpu": 0, "corrected": 5, "type": "ecc"}]                       # counts given: kept as given
    with pytest.raises(LabError, match="--param hca=NAME"):
        lab_mod.inject_fault(cfg, "lab-r2n2", "slow_hca", hca="mlx9_9")


def test_a_key_written_twice_in_the_lab_config_is_refused(tmp_path):
    """PyYAML alone keeps the last of two keys; the lab config is read strictly."""
    with open(lab_config.DEFAULT_CONFIG) as handle:
        text = handle.read()
    path = tmp_path / "lab.yml"
    path.write_text(text + "state_dir: build/other\n")
    first = text.splitlines().index(next(l for l in text.splitlines() if l.startswith("state_dir:"))) + 1
    with pytest.raises(LabError) as err:
        lab_config.load(str(path))
    assert err.value.msg == ("Cannot read the lab config %s line %d: key 'state_dir' appears twice (first on line "
                             "%d); fix: keep one of the two keys." % (path, len(text.splitlines()) + 1, first))
