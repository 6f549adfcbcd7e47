"""playbooks/tasks/attest.yml through ansible-playbook: localhost (connection local) is the node, a real
swtpm on a TCP socket is its TPM (EK certificate from swtpm_localca), `gpufleet attest` is the controller
with a SQLite ledger in a temporary folder. References are recorded with `gpufleet attest references`
from tpm2_pcrread on the same TPM, as a site records them from a qualified node.

The tests share one node and run in file order: check mode changes nothing; the first join enrolls and
passes (its quote and its event log); the second reuses the enrollment; an event log of another boot and a
PCR extended after the references are refused; last, a swapped TPM is refused until a re-enrollment run.
"""
import hashlib
import json
import os
import subprocess

import pytest

from gpufleet.collection import collections_path
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing
from tests.helpers import ROOT, VENV_BIN
from tests.unit.gpufleet.attest.swtpm_support import LocalCa, SoftTpm, require_tools
from tests.unit.gpufleet.attest.test_eventlog import binary_log

pytestmark = pytest.mark.integration

NODE = "gpu-401"
PLAYBOOK = os.path.join(ROOT, "tests", "integration", "attest", "playbooks", "join_attest.yml")
TASKS = os.path.join(ROOT, "playbooks", "tasks", "attest.yml")
GPUFLEET = os.path.join(VENV_BIN, "gpufleet")
PCRS = "sha256:0,1,2,3,4,5,6,7"
BOOT = ((0, b"firmware 1.4.2"), (2, b"option roms"), (4, b"shim grub kernel"), (7, b"secure boot on, db"))


def _boot(tpm):
    """The measurements of a clean boot, extended into a fresh TPM."""
    for pcr, data in BOOT:
        tpm.tool("tpm2_pcrextend", "%d:sha256=%s" % (pcr, hashlib.sha256(data).hexdigest()))


def _cli(*argv):
    return subprocess.run([GPUFLEET, "attest"] + list(argv), capture_output=True, text=True, timeout=60, check=False)


class Site:
    """The controller's files (CA bundle, image key, references, ledger, state) and the node's TPM."""

    def __init__(self, root):
        self.root = root
        self.ca = LocalCa(str(root / "vendor-ca"))
        self.tpm = SoftTpm(str(root / "tpm"), self.ca).start()
        _boot(self.tpm)
        self.path("bundle.pem", self.ca.bundle)
        key = signing.generate_key("ed25519")
        signing.write_keypair(key, self.path("image.key"), self.path("image.pub"))
        self.path("pcrread.txt", self.tpm.tool("tpm2_pcrread", PCRS).stdout)
        self.path("boot.bin", binary_log(BOOT))   # the firmware's log of that boot, as the node's kernel shows it
        self.ledger, self.state, self.tmp = self.path("ledger.sqlite"), self.path("state"), self.path("tmp")
        os.makedirs(self.tmp)

    def path(self, name, data=None):
        """The path of the site's file ``name``, written with ``data`` first when given."""
        if data is not None:
            (self.root / name).write_bytes(data)
        return str(self.root / name)

    def join(self, tpm=None, check=False, event_log="boot.bin", reenroll_reason=None, ak_algorithm="ecc"):
        """ansible-playbook of the attestation step against ``tpm`` (default: the node's own); an ECC
        AK unless told otherwise (an RSA AK costs swtpm seconds on a busy machine)."""
        local = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
        inventory = {"all": {"hosts": {"localhost": local}, "children": {"nodes": {"hosts": {NODE: local}}}}}
        extra = {"gpufleet_attest_tasks": TASKS, "gpufleet_cli": GPUFLEET, "gpufleet_ledger": self.ledger,
                 "gpufleet_attest_state_dir": self.state, "gpufleet_attest_ek_ca_bundle": self.path("bundle.pem"),
                 "gpufleet_attest_references": self.path("refs.json"), "gpufleet_image_public_key": self.path("image.pub"),
                 "gpufleet_image_version": "2026.05.1", "gpufleet_firmware_version": "1.4.2",
                 "gpufleet_tpm_tcti": "swtpm:host=127.0.0.1,port=%d" % (tpm or self.tpm).port,
                 "gpufleet_attest_ak_algorithm": ak_algorithm,
                 "gpufleet_attest_event_log": True, "gpufleet_attest_event_log_path": self.path(event_log)}
        if reenroll_reason:
            extra["gpufleet_attest_reenroll_reason"] = reenroll_reason
        self.path("inventory.json", json.dumps(inventory).encode())
        # TMPDIR: the work folders on the "node" and the controller, checked empty afterwards
        env = dict(os.environ, PATH=VENV_BIN + os.pathsep + os.environ["PATH"], TMPDIR=self.tmp,
                   ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
        return subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), "-i", self.path("inventory.json"), PLAYBOOK,
                               "-e", json.dumps(extra)] + (["--check"] if check else []), capture_output=True, text=True, env=env, timeout=300,
                              check=False)

    def history(self):
        done = _cli("show", NODE, "--history", "--json", "--ledger", self.ledger)
        assert done.returncode in (0, 3), done.stderr
        return json.loads(done.stdout)

    def left_behind(self):
        """Files the joins left in the temporary folder or the open challenges."""
        challenges = os.path.join(self.state, "challenges")
        return sorted(os.listdir(self.tmp)) + (sorted(os.listdir(challenges)) if os.path.isdir(challenges) else [])


def _ran(proc, task):
    """The status lines of ``task`` in the play's output ("ok: [gpu-401]", "skipping: ...")."""
    parts = proc.stdout.split("TASK [%s]" % task)
    assert len(parts) == 2, "task %r not in the output" % task
    return [line for line in parts[1].split("TASK [")[0].splitlines()[1:] if line.strip()]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    require_tools()
    made = Site(tmp_path_factory.mktemp("attest-join"))
    recorded = _cli("references", "--pcrread", made.path("pcrread.txt"), "--image-version", "2026.05.1",
                    "--firmware-version", "1.4.2", "--key", made.path("image.key"), "--out", made.path("refs.json"))
    assert recorded.returncode == 0, recorded.stderr
    yield made
    made.tpm.stop()


@pytest.fixture(scope="module")
def first_join(site):
    return site.join()


def test_check_mode_enrolls_nothing_and_touches_no_tpm(site):
    proc = site.join(check=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "check mode: attestation skipped" in proc.stdout
    assert not os.path.exists(site.ledger)   # nothing enrolled: the ledger was not even created
    assert "0x81000101" not in site.tpm.tool("tpm2_getcap", "handles-persistent").stdout.decode()
    assert not os.path.exists(site.state)


def test_first_join_enrolls_the_node_and_its_quote_verifies(site, first_join):
    assert first_join.returncode == 0, first_join.stdout[-3000:]
    assert ("%s: attestation passed: sha256:0, sha256:1, sha256:2, sha256:3, sha256:4, sha256:5, sha256:6, sha256:7 "
            "equal the references; the event log reproduces the quote" % NODE) in first_join.stdout, first_join.stdout
    assert _ran(first_join, "Record the enrollment when the secret came back") == ["changed: [%s -> localhost]" % NODE]
    history = site.history()
    assert [(r["node"], r["replaced_at"]) for r in history] == [(NODE, None)]
    assert site.left_behind() == []  # work folders removed, the challenge (its secret) spent


def test_second_join_reuses_the_enrollment_and_passes(site, first_join):
    assert first_join.returncode == 0
    enrolled = site.history()
    again = site.join()
    assert again.returncode == 0, again.stdout[-3000:]
    assert "%s: attestation passed" % NODE in again.stdout
    for task in ("Make the attestation key and keep it at its handle (none there yet)",
                 "Record the enrollment when the secret came back"):
        assert _ran(again, task) == ["skipping: [%s]" % NODE], again.stdout[-3000:]
    assert site.history() == enrolled
    assert site.left_behind() == []


def test_an_event_log_that_does_not_reproduce_the_quote_is_refused(site, first_join):
    assert first_join.returncode == 0
    site.path("other.bin", binary_log(BOOT[:-1] + ((7, b"secure boot off"),)))
    proc = site.join(event_log="other.bin")
    assert proc.returncode != 0
    assert "refused (event_log_mismatch)" in proc.stdout and "sha256:7" in proc.stdout, proc.stdout[-3000:]
    assert site.left_behind() == []


def test_a_pcr_extended_after_the_references_is_refused_naming_it(site, first_join):
    """The node's TPM keeps PCR 4 changed (a changed boot: another boot loader) for the tests after it."""
    assert first_join.returncode == 0
    site.tpm.tool("tpm2_pcrextend", "4:sha256=%s" % hashlib.sha256(b"another grub").hexdigest())
    proc = site.join()
    assert proc.returncode != 0
    assert "refused (pcr_mismatch)" in proc.stdout and "PCR sha256:4 is" in proc.stdout, proc.stdout[-3000:]
    assert "attestation passed" not in proc.stdout
    assert site.left_behind() == []


def test_a_swapped_tpm_is_refused_until_a_person_re_enrolls_the_node(site, first_join, tmp_path):
    assert first_join.returncode == 0
    swapped = SoftTpm(str(tmp_path / "swapped"), site.ca).start()  # same vendor, new EK
    try:
        _boot(swapped)
        proc = site.join(swapped)
        assert proc.returncode != 0
        assert "refused (ek_changed)" in proc.stdout and "presents a different TPM" in proc.stdout, proc.stdout[-3000:]
        assert "attestation passed" not in proc.stdout
        assert len(site.history()) == 1
        assert site.left_behind() == []
        again = site.join(swapped, reenroll_reason="TPM replaced, board checked")
    finally:
        swapped.stop()
    assert again.returncode == 0 and "%s: attestation passed" % NODE in again.stdout, again.stdout[-3000:]
    old, new = site.history()
    assert old["replaced_by"] == new["id"] and new["reason"] == "TPM replaced, board checked"
    assert site.left_behind() == []
