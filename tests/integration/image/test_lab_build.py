"""Build the lab image for real (Packer docker builder on the debootstrap base), then prove:
the manifest and signature verify (our CLI, the image_verify module, and plain openssl),
a tampered, unsigned or wrong-key copy is refused, the image holds its pins, and the
drift playbook sees a clean node as clean and a changed node as drifted.

A second forced build of the same inputs is compared file by file with the first; the
result is written to build/image-repro/report.json (reproducibility is reported, not asserted).
"""
import json
import os
import shutil
import subprocess
import time

import pytest

from tests.helpers import ROOT, VENV_BIN, ensure_base_image, need_docker, need_tool

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GPUFLEET = os.path.join(VENV_BIN, "gpufleet")
OUT = os.path.join(ROOT, "build", "images", "lab")
REPRO = os.path.join(ROOT, "build", "image-repro")
PUB = os.path.join(ROOT, "build", "keys", "lab-signing.pub")
TAG = "gpufleet-image-test/node:lab-%d" % os.getpid()
ENV = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build", "collections"),
           ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), PATH=VENV_BIN + os.pathsep + os.environ["PATH"])


def run(argv, check=True, **kwargs):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=ENV,
                          cwd=ROOT, check=False, **kwargs)
    if check and proc.returncode != 0:
        pytest.fail("%s failed (rc=%d):\n%s\n%s" % (" ".join(argv), proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    return proc


def _summary(stdout):
    return json.loads(stdout.split(": ", 1)[1][stdout.split(": ", 1)[1].index("{"):])


@pytest.fixture(scope="module")
def lab_image():
    need_docker()
    need_tool("packer")
    ensure_base_image()
    start = time.time()
    proc = run([GPUFLEET, "image", "build", "lab", "--generate-key"])
    summary = _summary(proc.stdout)
    summary["wall_s"] = round(time.time() - start, 1)
    print("lab image build: %s" % json.dumps(summary.get("timings")))
    return summary


@pytest.fixture()
def copy_of_image(lab_image, tmp_path):
    for name in ("manifest.json", "manifest.json.sig", "lab.rootfs.tar.gz"):
        shutil.copy(os.path.join(OUT, name), str(tmp_path / name))
    return tmp_path


def test_build_outputs_verify_and_match_the_pins(lab_image):
    proc = run([GPUFLEET, "image", "verify", os.path.join(OUT, "manifest.json"), "--public-key", PUB,
                "--expected-version", "lab"])
    verified = _summary(proc.stdout)
    assert verified["build_id"] == lab_image["build_id"]
    with open(os.path.join(OUT, "manifest.json")) as handle:
        manifest = json.load(handle)
    assert manifest["pins"]["requested"] == manifest["pins"]["installed"]
    assert manifest["release"]["BUILD_ID"] == manifest["build_id"]
    assert manifest["release"]["PINS_SHA256"] == manifest["pins_sha256"]
    assert len(manifest["packages"]) > 100 and manifest["kernel"]["installed"] == []
    with open(os.path.join(OUT, "sbom.spdx.json")) as handle:
        sbom = json.load(handle)
    assert len(sbom["packages"]) == len(manifest["packages"]) + 1


def test_openssl_verifies_the_signature_as_documented(lab_image, copy_of_image, tmp_path):
    need_tool("openssl")
    argv = ["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", PUB, "-rawin",
            "-in", str(copy_of_image / "manifest.json"), "-sigfile", str(copy_of_image / "manifest.json.sig")]
    assert "Signature Verified Successfully" in run(argv).stdout
    with open(str(copy_of_image / "manifest.json"), "ab") as handle:
        handle.write(b" ")
    assert run(argv, check=False).returncode != 0


def test_ecdsa_resigned_manifest_verifies_with_openssl_dgst(lab_image, copy_of_image, tmp_path):
    need_tool("openssl")
    key = str(tmp_path / "org.key")
    run([GPUFLEET, "image", "keygen", "--out", key, "--algorithm", "ecdsa-p256"])
    manifest = str(copy_of_image / "manifest.json")
    run([GPUFLEET, "image", "sign", manifest, "--key", key])
    proc = run(["openssl", "dgst", "-sha256", "-verify", str(tmp_path / "org.pub"), "-signature", manifest + ".sig", manifest])
    assert "Verified OK" in proc.stdout
    run([GPUFLEET, "image", "verify", manifest, "--public-key", str(tmp_path / "org.pub")])
    assert "not by the trusted key" in run([GPUFLEET, "image", "verify", manifest, "--public-key", PUB], check=False).stderr


def test_tampered_unsigned_and_wrong_key_copies_are_refused(lab_image, copy_of_image, tmp_path):
    manifest = str(copy_of_image / "manifest.json")
    with open(str(copy_of_image / "lab.rootfs.tar.gz"), "r+b") as handle:
        handle.seek(4096)
        byte = handle.read(1)
        handle.seek(4096)
        handle.write(bytes([byte[0] ^ 0xFF]))
    proc = run([GPUFLEET, "image", "verify", manifest, "--public-key", PUB], check=False)
    assert proc.returncode == 1 and "was altered" in proc.stderr
    proc = run(["ansible", "localhost", "-m", "gpufleet.baremetal.image_verify",
                "-a", "manifest=%s public_key=%s" % (manifest, PUB)], check=False)
    assert proc.returncode != 0 and "was altered" in proc.stdout
    os.remove(manifest + ".sig")
    proc = run([GPUFLEET, "image", "verify", manifest, "--public-key", PUB], check=False)
    assert proc.returncode == 1 and "is unsigned" in proc.stderr
    other = str(tmp_path / "other.key")
    run([GPUFLEET, "image", "keygen", "--out", other])
    proc = run([GPUFLEET, "image", "verify", os.path.join(OUT, "manifest.json"), "--public-key",
                str(tmp_path / "other.pub")], check=False)
    assert proc.returncode == 1 and "not by the trusted key" in proc.stderr


def test_image_verify_module_accepts_the_real_build(lab_image):
    proc = run(["ansible", "localhost", "-m", "gpufleet.baremetal.image_verify",
                "-a", "manifest=%s public_key=%s expected_version=lab" % (os.path.join(OUT, "manifest.json"), PUB)])
    assert lab_image["build_id"] in proc.stdout and '"changed": false' in proc.stdout


@pytest.fixture(scope="module")
def node_image(lab_image):
    run([GPUFLEET, "image", "import", os.path.join(OUT, "manifest.json"), "--public-key", PUB, "--tag", TAG])
    yield TAG
    run(["docker", "image", "rm", "-f", TAG], check=False)


@pytest.fixture()
def node(node_image):
    name = "gpufleet-image-drift-%d" % os.getpid()
    run(["docker", "run", "-d", "--name", name, node_image, "sleep", "infinity"])
    yield name
    run(["docker", "rm", "-f", name], check=False)


def test_image_contents_are_pinned_held_and_generic(node, lab_image):
    script = ("cat /etc/gpufleet/image-release; echo HELD $(apt-mark showhold); "
              "test ! -e /etc/munge/munge.key && test ! -s /etc/machine-id && test -z \"$(ls /var/lib/apt/lists)\" "
              "&& echo GENERIC; slurmd -V; fio --version; iperf3 --version | head -1; "
              "for c in ib_write_bw ibv_devices tpm2_getrandom ssh ip python3 munged; do command -v $c || echo MISSING $c; done")
    out = run(["docker", "exec", node, "sh", "-c", script]).stdout
    assert 'BUILD_ID="%s"' % lab_image["build_id"] in out and 'PINS_SHA256="%s"' % lab_image["pins_sha256"] in out
    held = out.split("HELD ", 1)[1].splitlines()[0].split()
    with open(os.path.join(OUT, "manifest.json")) as handle:
        assert sorted(held) == sorted(json.load(handle)["pins"]["requested"])
    assert "GENERIC" in out and "MISSING" not in out
    assert "slurm-wlm 22.05.8" in out and "fio-3.33" in out and "iperf 3.12" in out


def _drift(inventory, report, fail=False):
    return run(["ansible-playbook", "-i", inventory, os.path.join(ROOT, "playbooks", "image_drift.yml"),
                "-e", "image_drift_report=%s" % report, "-e", "image_drift_fail_on_drift=%s" % fail], check=False)


def test_drift_playbook_reports_clean_then_drifted_node(node, tmp_path):
    inventory = tmp_path / "inventory.yml"
    inventory.write_text("all:\n  hosts:\n    %s:\n      ansible_connection: community.docker.docker\n" % node)
    proc = _drift(str(inventory), str(tmp_path / "clean.json"), fail=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert json.loads((tmp_path / "clean.json").read_text())[node]["drifted"] is False
    run(["docker", "exec", node, "sh", "-c", "dpkg --force-all -r iperf3 >/dev/null 2>&1; apt-mark unhold fio; "
         "sed -i 's/^BUILD_ID=.*/BUILD_ID=\"tampered\"/' /etc/gpufleet/image-release"])
    proc = _drift(str(inventory), str(tmp_path / "drift.json"))
    assert proc.returncode == 0, proc.stdout[-3000:]
    report = json.loads((tmp_path / "drift.json").read_text())[node]
    assert report["drifted"] is True
    assert [r["package"] for r in report["packages"]["removed"]] == ["iperf3"]
    assert report["release"] == [{"key": "BUILD_ID", "expected": report["build_id"], "actual": "tampered"}]
    assert "fio" in report["unheld_pins"] and "iperf3" in report["unheld_pins"]
    assert _drift(str(inventory), str(tmp_path / "again.json"), fail=True).returncode != 0


def test_second_build_reproducibility_is_reported(lab_image):
    start = time.time()
    out = os.path.join(REPRO, "lab")
    second = _summary(run([GPUFLEET, "image", "build", "lab", "--out", out, "--force"]).stdout)
    proc = run([GPUFLEET, "image", "diff", os.path.join(OUT, "lab.rootfs.tar.gz"), os.path.join(out, "lab.rootfs.tar.gz")])
    report = json.loads(proc.stdout)
    report.update(first_sha256=lab_image["artifact_sha256"], second_sha256=second["artifact_sha256"],
                  second_build_s=round(time.time() - start, 1), build_id=second["build_id"])
    with open(os.path.join(REPRO, "report.json"), "w") as handle:
        json.dump(report, handle, indent=2, sort_keys=True)
    print("reproducibility: identical=%s, %d differing paths" % (report["identical_sha256"], report["count"]))
    assert second["build_id"] == lab_image["build_id"]
    assert report["identical_sha256"] == (report["first_sha256"] == report["second_sha256"])
    assert report["identical_sha256"] or report["count"] > 0  # a digest difference must be explained by paths


def test_drift_playbook_fails_a_node_without_image_release(tmp_path):
    need_docker()
    name = "gpufleet-image-noimg-%d" % os.getpid()
    run(["docker", "run", "-d", "--name", name, ensure_base_image(), "sleep", "600"])
    try:
        inventory = tmp_path / "inventory.yml"
        inventory.write_text("all:\n  hosts:\n    %s:\n      ansible_connection: community.docker.docker\n" % name)
        proc = _drift(str(inventory), str(tmp_path / "r.json"))
        assert proc.returncode != 0 and "was not imaged from a signed gpufleet image" in proc.stdout
    finally:
        run(["docker", "rm", "-f", name], check=False)
