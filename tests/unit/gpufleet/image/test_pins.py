import os

import pytest
import yaml

from gpufleet.image import pins as pins_mod
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import PinError
from tests.helpers import ROOT

VERSIONS = os.path.join(ROOT, "packer", "versions")


def test_every_shipped_pin_file_validates():
    versions = pins_mod.list_versions(VERSIONS)
    assert "lab" in versions and len([v for v in versions if _profile(v) == "production"]) >= 2
    for version in versions:
        pins = pins_mod.load_pins(VERSIONS, version)
        assert pins.version == version and len(pins.sha256) == 64
        assert all(pins.packages.values())


def _profile(version):
    return pins_mod.load_pins(VERSIONS, version).data["profile"]


def test_production_versions_pin_570_and_580_driver_branches():
    drivers = sorted(pins_mod.load_pins(VERSIONS, v).data["components"]["gpu_driver"]["version"].split(".")[0]
                     for v in pins_mod.list_versions(VERSIONS) if _profile(v) == "production")
    assert drivers == ["570", "580"]


def test_the_lab_machine_version_is_the_lab_image_plus_the_boot_packages_and_the_system_bus():
    from gpufleet.image.disk_build import BOOT_PACKAGES
    lab, machine = pins_mod.load_pins(VERSIONS, "lab"), pins_mod.load_pins(VERSIONS, "lab-machine")
    assert machine.data["profile"] == "lab"
    assert set(BOOT_PACKAGES) <= set(machine.packages)          # gpufleet image disk can boot it
    assert all(machine.packages[name] == version for name, version in lab.packages.items())
    # and D-Bus, which slurmd's cgroup/v2 plugin needs under systemd (the container nodes run no systemd)
    assert set(machine.packages) - set(lab.packages) == set(BOOT_PACKAGES) - {"python3"} | {"dbus"}


def test_lab_pins_no_gpu_stack_and_no_hwsim():
    lab = pins_mod.load_pins(VERSIONS, "lab")
    assert not {"gpu_driver", "cuda", "nccl", "dcgm"} & set(lab.data["components"])
    assert {"slurmd", "slurm-client", "munge", "fio", "iperf3", "rdma-core", "ibverbs-utils", "perftest",
            "tpm2-tools", "openssh-client", "iproute2", "python3"} <= set(lab.packages)
    for name in os.listdir(os.path.join(ROOT, "packer", "versions")) + ["build.pkr.hcl", "sources.pkr.hcl"]:
        path = os.path.join(ROOT, "packer", "versions", name) if name.endswith(".yml") else os.path.join(ROOT, "packer", name)
        with open(path) as handle:
            assert "hwsim" not in handle.read()


def _lab_data():
    with open(os.path.join(VERSIONS, "2026.03.1.yml")) as handle:
        return yaml.safe_load(handle)


def _render(data):
    return yaml.safe_dump(data, sort_keys=False)


def _mut(func):
    data = _lab_data()
    func(data)
    return _render(data)


CASES = [
    ("unknown component", lambda d: d["components"].update(zz_firmware={"packages": {"x": "1"}, "version": "1"}),
     'component "zz_firmware" is unknown'),
    ("missing version", lambda d: d["components"]["nccl"]["packages"].update(libnccl2=None), "has no exact version"),
    ("wildcard version", lambda d: d["components"]["nccl"]["packages"].update(libnccl2="2.26.*"), "has no exact version"),
    ("empty component version", lambda d: d["components"]["cuda"].update(version=""), "component cuda has no version"),
    ("driver too old for cuda", lambda d: d["components"]["gpu_driver"].update(version="570.86.10"),
     "older than 570.124.06, the minimum driver of CUDA 12.8.1"),
    ("cuda not in table", lambda d: d["components"]["cuda"].update(version="11.8.0"), "not in the compatibility table"),
    ("nccl for other cuda", lambda d: d["components"]["nccl"]["packages"].update(libnccl2="2.26.2-1+cuda12.9"),
     "built for CUDA 12.9 but the image pins CUDA 12.8"),
    ("dcgm for other cuda major", lambda d: d["components"]["dcgm"].update(
        packages={"datacenter-gpu-manager-4-core": "1:4.2.3-1", "datacenter-gpu-manager-4-cuda13": "1:4.2.3-1"}),
     "targets CUDA 13"),
    ("fabric manager branch", lambda d: d["components"]["fabric_manager"].update(
        packages={"nvidia-fabricmanager-580": "580.82.07-1"}), "from driver branch 580"),
    ("required component missing", lambda d: d["components"].pop("dcgm"), "requires components dcgm"),
    ("unsorted packages", lambda d: d["components"]["nccl"].update(
        packages={"libnccl2": "2.26.2-1+cuda12.8", "libnccl-dev": "2.26.2-1+cuda12.8"}), "are not sorted"),
    ("unknown top key", lambda d: d.update(zz="x"), "unknown keys ['zz']"),
    ("bad fingerprint", lambda d: d["apt_keys"][0].update(fingerprint="abc"), "40-hex uppercase fingerprint"),
    ("duplicate package", lambda d: d["components"]["nccl"]["packages"].update({"rdma-core": "39.0-1"}),
     "pinned by both"),
]


@pytest.mark.parametrize("name, mutate, message", CASES, ids=[c[0] for c in CASES])
def test_invalid_pins_fail_with_a_clear_reason(name, mutate, message):
    text = _mut(mutate)
    with pytest.raises(PinError) as err:
        pins_mod.parse_pins(text, "/x/2026.03.1.yml")
    assert message in err.value.msg
    assert err.value.msg.startswith("Pin file /x/2026.03.1.yml is invalid")


def test_version_must_match_file_name_and_file_must_exist(tmp_path):
    with pytest.raises(PinError, match="does not match the file name"):
        pins_mod.parse_pins(_render(_lab_data()), "/x/2026.04.1.yml")
    with pytest.raises(PinError, match="Known versions: lab"):
        (tmp_path / "lab.yml").write_text("x: 1\n")
        pins_mod.load_pins(str(tmp_path), "2027.01.1")


def test_render_pkrvars_carries_pins_and_build_identity():
    pins = pins_mod.load_pins(VERSIONS, "lab")
    rendered = pins_mod.render_pkrvars(pins, "lab-docker-abc", "/out")
    assert rendered["packages"]["slurmd"] == pins.packages["slurmd"]
    assert rendered["pins_sha256"] == pins.sha256 and rendered["build_id"] == "lab-docker-abc"
    assert rendered["os_id"] == "debian" and rendered["output_dir"] == "/out"
    assert pins.source_date_epoch() > 1700000000


def test_a_key_written_twice_is_refused_naming_both_lines():
    """PyYAML alone keeps the last of two keys: a second ``version`` would silently win."""
    text = _render(_lab_data())
    doubled = text + "version: 2026.01.1\n"
    path = os.path.join(VERSIONS, "2026.03.1.yml")
    with pytest.raises(PinError) as caught:
        pins_mod.parse_pins(doubled, path)
    first = text.splitlines().index(next(l for l in text.splitlines() if l.startswith("version:"))) + 1
    last = len(doubled.splitlines())
    assert str(caught.value) == ("Pin file %s is not valid YAML: line %d: key 'version' appears twice (first on "
                                 "line %d). Keep one of the two keys." % (path, last, first))
