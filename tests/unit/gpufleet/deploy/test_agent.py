import io
import json
import subprocess
import urllib.error

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing
from gpufleet.deploy import agent as agent_mod
from gpufleet.deploy.agent import Agent, AgentConfig, Reporter
from gpufleet.deploy.errors import DeployError
from gpufleet.deploy.fetch import Fetcher
from gpufleet.deploy.gpt import find, partitions
from gpufleet.deploy.write import HEADER
from tests.unit.gpufleet.deploy.disk_factory import gpt_image, signed_disk

BASE = "https://images.example/2026.06.2/"
KEY_LINE = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGsomekeymaterialxxxxxxxxxxxxxxxxxxxxxxxxx controller"


class Served:
    """A fake artifact server: a dict of URL -> bytes, behind Fetcher's opener hook."""

    def __init__(self, folder, files):
        self.files = {BASE + name: body for name, body in files.items()}
        self.requests = []

    def __call__(self, url):
        self.requests.append(url)
        if url not in self.files:
            raise urllib.error.HTTPError(url, 404, "Not Found", {}, None)
        return io.BytesIO(self.files[url])


class Tools:
    """subprocess.run stand-in: lsblk reports the test's disk file; other tools are recorded."""

    def __init__(self, disk, size, serial="S5GXNX0R100001"):
        self.calls = []
        self.lsblk = json.dumps({"blockdevices": [
            {"name": "nvme0n1", "path": disk, "size": size, "serial": serial, "type": "disk", "ro": False,
             "rota": False, "model": "SAMSUNG MZQL2960HCJR"}]})

    def __call__(self, argv, **_kw):
        self.calls.append(argv)
        out = self.lsblk if argv[0] == "lsblk" else ""
        return subprocess.CompletedProcess(argv, 0, out, "")


def _config(**over):
    data = {"node": "r42n01", "image_url": BASE + "2026.06.2.disk.raw", "image_version": "2026.06.2",
            "root_device": {"serial": "S5GXNX0R100001"},
            "seed": {"hostname": "r42n01", "ssh_key": KEY_LINE, "address": "10.0.8.21/24", "gateway": "10.0.8.1",
                     "dns": ["10.0.0.53"]}}
    data.update(over)
    return AgentConfig(data)


def _setup(tmp_path, disk_size=16 << 20, image=None, **kw):
    image = image or gpt_image(size=8 << 20)
    files, key = signed_disk(tmp_path, image, **kw)
    disk = tmp_path / "nvme0n1"
    disk.write_bytes(b"\x5a" * disk_size)
    return image, files, key, str(disk)


def _agent(tmp_path, files, key, disk, disk_size=16 << 20, config=None, events=None, efi=True):
    efi_dir = tmp_path / "efi"
    if efi:
        efi_dir.mkdir(exist_ok=True)
    served = Served(tmp_path, files)
    tools = Tools(disk, disk_size)
    events = events if events is not None else []
    reporter = Reporter("r42n01", "https://ctl.example/deploy", "secret-token",
                        console=lambda line: None, post=lambda body: events.append(json.loads(body)))
    fetcher = Fetcher(ca_file=None, opener=served)
    fetcher.context = object()  # a CA is pinned (the opener ignores it)
    agent = Agent(config or _config(), signing.public_pem(key.public_key()), fetcher, reporter, run=tools,
                  efi_dir=str(efi_dir), by_path_folder=str(tmp_path / "none"))
    return agent, tools, served, events


def test_installs_verified_image_seed_grow_and_boot_entry(tmp_path):
    image, files, key, disk = _setup(tmp_path)
    agent, tools, served, events = _agent(tmp_path, files, key, disk)
    summary = agent.install()
    data = open(disk, "rb").read()
    assert data[:HEADER] == image[:HEADER]
    seed_part = find(image[:HEADER], "gpufleet-seed")
    seed = json.loads(data[seed_part["first_byte"]:seed_part["first_byte"] + seed_part["size_bytes"]].rstrip(b"\0"))
    assert seed == {"schema": "gpufleet.seed/v1", "hostname": "r42n01", "ssh_authorized_keys": [KEY_LINE],
                    "address": "10.0.8.21/24", "gateway": "10.0.8.1", "dns": ["10.0.0.53"]}
    # everything outside the seed partition is the image, byte for byte
    start, end = seed_part["first_byte"], seed_part["first_byte"] + seed_part["size_bytes"]
    assert data[:start] == image[:start] and data[end:len(image)] == image[end:]
    assert [c[0] for c in tools.calls] == ["lsblk", "sgdisk", "growpart", "e2fsck", "resize2fs", "efibootmgr"]
    assert tools.calls[2] == ["growpart", disk, "3"] and tools.calls[4] == ["resize2fs", disk + "p3"]
    assert "--part" in tools.calls[5] and tools.calls[5][tools.calls[5].index("--part") + 1] == "1"
    assert served.requests[:2] == [BASE + "manifest.json", BASE + "manifest.json.sig"]
    assert summary["version"] == "2026.06.2" and summary["boot_entry"] == "gpufleet 2026.06.2"
    assert [e["step"] for e in events][0] == "verify manifest"


def test_a_wrong_key_fails_before_any_image_byte_is_requested_or_written(tmp_path):
    _image, files, _key, disk = _setup(tmp_path)
    before = open(disk, "rb").read()
    agent, tools, served, _ = _agent(tmp_path, files, signing.generate_key("ed25519"), disk)
    with pytest.raises(DeployError, match="not by the trusted key") as err:
        agent.install()
    assert err.value.step == "verify"
    assert served.requests == [BASE + "manifest.json", BASE + "manifest.json.sig"]
    assert open(disk, "rb").read() == before and tools.calls == []


def test_an_altered_artifact_leaves_the_disk_unbootable(tmp_path):
    image, files, key, disk = _setup(tmp_path)
    files["2026.06.2.disk.raw"] = image[:-1] + b"!"
    agent, tools, _, _ = _agent(tmp_path, files, key, disk)
    with pytest.raises(DeployError, match="artifact was altered"):
        agent.install()
    assert open(disk, "rb").read(HEADER) == b"\0" * HEADER
    assert [c[0] for c in tools.calls] == ["lsblk"]  # no seed, no grow, no boot entry


def test_a_truncated_download_fails_and_a_rerun_converges(tmp_path):
    image, files, key, disk = _setup(tmp_path)
    whole = files["2026.06.2.disk.raw"]
    files["2026.06.2.disk.raw"] = whole[:len(whole) // 3]
    agent, _, _, _ = _agent(tmp_path, files, key, disk)
    with pytest.raises(DeployError, match="truncated download"):
        agent.install()
    files["2026.06.2.disk.raw"] = whole
    agent, _, _, _ = _agent(tmp_path, files, key, disk)
    agent.install()
    assert open(disk, "rb").read(HEADER) == image[:HEADER]


def test_no_disk_matching_the_hints_writes_nothing(tmp_path):
    _image, files, key, disk = _setup(tmp_path)
    before = open(disk, "rb").read()
    agent, _, _, _ = _agent(tmp_path, files, key, disk, config=_config(root_device={"serial": "OTHER"}))
    with pytest.raises(DeployError, match="no disk matches"):
        agent.install()
    assert open(disk, "rb").read() == before


def test_a_disk_too_small_is_refused_before_writing(tmp_path):
    _image, files, key, disk = _setup(tmp_path, disk_size=4 << 20)
    before = open(disk, "rb").read()
    agent, _, _, _ = _agent(tmp_path, files, key, disk, disk_size=4 << 20)
    with pytest.raises(DeployError, match="needs"):
        agent.install()
    assert open(disk, "rb").read() == before


def test_a_version_other_than_the_expected_one_is_refused(tmp_path):
    _image, files, key, disk = _setup(tmp_path)
    agent, _, _, _ = _agent(tmp_path, files, key, disk, config=_config(image_version="2026.07.1"))
    with pytest.raises(DeployError, match="not the expected 2026.07.1"):
        agent.install()


def test_legacy_bios_makes_no_boot_entry(tmp_path):
    _image, files, key, disk = _setup(tmp_path)
    agent, tools, _, _ = _agent(tmp_path, files, key, disk, efi=False)
    assert agent.install()["boot_entry"] is None
    assert "efibootmgr" not in [c[0] for c in tools.calls]


def test_plain_http_is_refused_unless_allowed_and_https_needs_a_pinned_ca():
    with pytest.raises(DeployError, match="only https"):
        Fetcher(opener=lambda url: None).open("http://x/manifest.json")
    with pytest.raises(DeployError, match="no CA pinned"):
        Fetcher(opener=lambda url: None).open("https://x/manifest.json")
    with pytest.raises(DeployError, match="only https"):
        Fetcher(opener=lambda url: None, allow_http=True).open("file:///etc/passwd")
    assert Fetcher(opener=lambda url: io.BytesIO(b"ok"), allow_http=True).get("http://x/a", 10) == b"ok"


def test_the_seed_partition_table_is_read_from_the_image():
    names = [p["name"] for p in partitions(gpt_image())]
    assert names == ["gpufleet-esp", "gpufleet-seed", "gpufleet-root"]
    with pytest.raises(DeployError, match="no GPT"):
        partitions(b"\0" * HEADER)


@pytest.mark.parametrize("seed, field", [
    ({"hostname": "R42_N01", "ssh_key": KEY_LINE}, "hostname"),
    ({"hostname": "r42n01", "ssh_key": "not a key"}, "ssh_key"),
    ({"hostname": "r42n01", "ssh_key": KEY_LINE, "address": "999.1.1.1/24"}, "address"),
    ({"hostname": "r42n01", "ssh_key": KEY_LINE, "address": "10.0.0.2/24", "gateway": "x"}, "gateway"),
])
def test_a_bad_seed_is_refused_before_anything_is_downloaded(seed, field):
    with pytest.raises(DeployError, match=field) as err:
        _config(seed=seed)
    assert err.value.step == "seed"


def test_main_reports_the_failure_with_its_reason_and_exits_1(tmp_path, monkeypatch, capsys):
    key_file = tmp_path / "key.pem"
    key_file.write_bytes(signing.public_pem(signing.generate_key("ed25519").public_key()))
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"node": "r42n01", "image_url": BASE + "x.disk.raw",
                                  "root_device": {"serial": "A"},
                                  "seed": {"hostname": "r42n01", "ssh_key": KEY_LINE}}))
    assert agent_mod.main(["--config", str(config), "--image-key", str(key_file)]) == 1
    err = capsys.readouterr().err
    assert "failed download" in err and "no CA pinned" in err
    monkeypatch.setattr(agent_mod, "_kernel_arg", lambda name: None)  # no gpufleet.config= on the kernel line
    assert agent_mod.main(["--image-key", str(key_file)]) == 1
    assert "no config given" in capsys.readouterr().err


def test_the_callback_token_never_reaches_the_console(tmp_path):
    lines = []
    reporter = Reporter("r42n01", "https://ctl.example/x", "secret-token", console=lines.append,
                        post=lambda body: (_ for _ in ()).throw(OSError("refused")))
    assert reporter.send("failed", "write", {"reason": "x"}, attempts=1) is False
    assert lines and not any("secret-token" in line for line in lines)
