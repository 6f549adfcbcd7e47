import os
import stat
import subprocess

import pytest

from gpufleet.deploy import firstboot
from gpufleet.deploy.errors import DeployError
from gpufleet.deploy.firstboot import apply_seed, main, read_seed


@pytest.fixture(autouse=True)
def host_keys(monkeypatch):
    made = []
    monkeypatch.setattr(firstboot, "_host_keys", lambda root: made.append(root))
    return made
from gpufleet.deploy.seed import build_seed, encode_seed

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGsomekeymaterialxxxxxxxxxxxxxxxxxxxxxxxxx controller"


def _partition(tmp_path, seed_bytes, size=1 << 20):
    part = tmp_path / "seed-part"
    part.write_bytes(seed_bytes + b"\0" * (size - len(seed_bytes)))
    return str(part)


def test_a_static_seed_becomes_hostname_key_and_networkd_file(tmp_path, host_keys):
    seed = build_seed("r42n01", KEY, "10.0.8.21/24", "10.0.8.1", ["10.0.0.53"])
    root = tmp_path / "root"
    assert main(["--device", _partition(tmp_path, encode_seed(seed)), "--root", str(root)]) == 0
    assert host_keys == [str(root)]
    assert (root / "etc/hostname").read_text() == "r42n01\n"
    keys = root / "root/.ssh/authorized_keys"
    assert keys.read_text() == KEY + "\n" and stat.S_IMODE(os.stat(keys).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(root / "root/.ssh").st_mode) == 0o700
    network = (root / "etc/systemd/network/10-gpufleet-mgmt.network").read_text()
    assert "Address=10.0.8.21/24\nGateway=10.0.8.1\nDNS=10.0.0.53\n" in network


def test_a_seed_without_an_address_asks_for_dhcp_and_applying_twice_changes_nothing(tmp_path):
    seed = build_seed("r42n02", KEY)
    root = tmp_path / "root"
    apply_seed(seed, str(root))
    first = {p: (root / p).read_bytes() for p in ("etc/hostname", "etc/systemd/network/10-gpufleet-mgmt.network",
                                                   "etc/gpufleet/seed-applied")}
    apply_seed(seed, str(root))
    assert {p: (root / p).read_bytes() for p in first} == first
    assert b"DHCP=yes" in first["etc/systemd/network/10-gpufleet-mgmt.network"]


@pytest.mark.parametrize("content, problem", [
    (b"", "not a JSON document"), (b"\xff\xfe", "not a JSON document"), (b"[1, 2]", "not a gpufleet.seed/v1"),
    (b'{"schema": "gpufleet.seed/v1"}', "lacks hostname"),
])
def test_a_missing_or_malformed_seed_stops_with_the_reason_and_writes_nothing(tmp_path, capsys, content, problem,
                                                                               host_keys):
    root = tmp_path / "root"
    assert main(["--device", _partition(tmp_path, content), "--root", str(root)]) == 1
    assert host_keys == []
    assert problem in capsys.readouterr().err
    assert not root.exists()


def test_no_seed_partition_names_the_fix(tmp_path):
    with pytest.raises(DeployError, match="image the node with the gpufleet installer"):
        read_seed(str(tmp_path / "missing"))


def test_host_keys_are_made_under_the_root_and_a_failure_is_named(monkeypatch):
    monkeypatch.undo()  # the real _host_keys, with a stand-in for ssh-keygen
    calls = []

    def run(argv, **_kw):
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 0 if len(calls) == 1 else 1, "", "no space left")

    firstboot._host_keys("/mnt/node", run=run)
    assert calls == [["ssh-keygen", "-A", "-f", "/mnt/node"]]
    with pytest.raises(DeployError, match="ssh-keygen -A failed: no space left"):
        firstboot._host_keys("/mnt/node", run=run)


def test_the_running_host_name_is_set_too(tmp_path):
    proc = tmp_path / "hostname"
    proc.write_text("debian")
    firstboot._running_hostname("r42n01", str(proc))
    assert proc.read_text() == "r42n01"
    with pytest.raises(DeployError, match="cannot set the host name"):
        firstboot._running_hostname("r42n01", str(tmp_path / "missing" / "hostname"))
