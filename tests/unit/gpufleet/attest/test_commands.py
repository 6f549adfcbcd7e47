"""``gpufleet attest``: each step end to end, a real swtpm with tpm2-tools as the node, the CLI as the controller.

The node's half runs tpm2-tools against a swtpm; the controller's half is ``gpufleet attest ...``
through the entry point, passing files between them as a playbook would.
"""
import hashlib
import json
import os
import re
import stat

import pytest

from gpufleet import main as cli_main
from gpufleet.attest import references
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing
from tests.unit.gpufleet.attest.swtpm_support import SoftTpm, ledger_store
from tests.unit.gpufleet.attest.test_eventlog import BOOT, eventlog_text

NODE = "gpu-301"
QUOTED = "sha256:0,1,2,7,8,9"


def cli(capsys, *argv):
    """(exit code, stdout, stderr lines) of ``gpufleet attest ARGV``."""
    code = cli_main.main(["attest"] + list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err.strip().splitlines()


def pcrread(tpm, selection=QUOTED):
    text = tpm.tool("tpm2_pcrread", selection).stdout.decode()
    return {"sha256": dict((m.group(1), m.group(2).lower())
                           for m in re.finditer(r"^\s+(\d+)\s*:\s*0x([0-9A-Fa-f]+)\s*$", text, re.M))}


class Rig:
    """A node (its own swtpm, booted with BOOT), the controller's ledger, state folder and signed references."""

    def __init__(self, root, ca, manufactured=None):
        self.root, self.ca = root, ca
        self.tpm = SoftTpm(str(root / "tpm"), ca, copy_of=manufactured).start()
        for pcr, data in BOOT:
            self.tpm.tool("tpm2_pcrextend", "%d:sha256=%s" % (pcr, hashlib.sha256(data).hexdigest()))
        self.ledger, self.state = str(root / "ledger.sqlite"), str(root / "state")
        self.write("bundle.pem", ca.bundle)
        self.sign_references()
        self.write("boot.log.yaml", eventlog_text(root, BOOT, "boot.bin").encode())

    def sign_references(self):
        """References of image v1 / firmware fw1: the TPM's PCRs now, signed with a new image key."""
        key = signing.generate_key("ed25519")
        data, signature = references.build_references(
            [{"image_version": "v1", "firmware_version": "fw1", "pcrs": pcrread(self.tpm)}], key)
        self.write("refs.json", data)
        self.write("refs.json.sig", signature)
        self.write("image.pub", signing.public_pem(key.public_key()))

    def path(self, name):
        return str(self.root / name)

    def write(self, name, data):
        with open(self.path(name), "wb") as handle:
            handle.write(data)
        return self.path(name)

    def common(self):
        return ["--ledger", self.ledger, "--state-dir", self.state]

    def challenge_argv(self, folder, tpm=None, *extra):
        tpm = tpm or self.tpm
        ak_public = tpm.create_ak(folder)
        ek = self.write(os.path.basename(folder) + "-ek.der", tpm.ek_certificate())
        ak = self.write(os.path.basename(folder) + "-ak.pub", ak_public)
        return ["enroll-challenge", NODE, "--ek-cert", ek, "--ek-ca-bundle", self.path("bundle.pem"),
                "--ak-public", ak, "--credential-out", os.path.join(folder, "cred.in")] + self.common() + list(extra)

    def activate(self, folder, tpm=None):
        with open(os.path.join(folder, "cred.in"), "rb") as handle:
            secret = (tpm or self.tpm).activate(folder, handle.read())
        return self.write(os.path.basename(folder) + "-secret.out", secret)

    def quote(self, folder, nonce, selection=QUOTED):
        message, signature, values = self.tpm.quote(folder, nonce, selection)
        return ["--quote-message", self.write("q.msg", message), "--quote-signature", self.write("q.sig", signature),
                "--quote-pcrs", self.write("q.pcrs", values)]

    def verify_argv(self, quote_files, *extra):
        return (["verify", NODE] + quote_files + ["--references", self.path("refs.json"), "--image-key",
                                                  self.path("image.pub"), "--image-version", "v1",
                                                  "--firmware-version", "fw1"] + self.common() + list(extra))


@pytest.fixture(scope="module")
def manufactured(tmp_path_factory, vendor_ca):
    """One never-started TPM state; each rig's TPM runs on its own copy (its own PCRs, NV and ledger).

    Every rig then has the same EK, which no test compares across rigs; the swapped TPM below
    is manufactured on its own, so its EK differs.
    """
    return SoftTpm(str(tmp_path_factory.mktemp("manufactured")), vendor_ca).state


@pytest.fixture
def rig(tmp_path, vendor_ca, manufactured):
    made = Rig(tmp_path, vendor_ca, manufactured)
    yield made
    made.tpm.stop()


def _enroll(rig, capsys, name="node"):
    folder = rig.path(name)
    code, out, err = cli(capsys, *rig.challenge_argv(folder))
    assert code == 0, err
    code, out, err = cli(capsys, "enroll-finish", NODE, "--secret", rig.activate(folder), "--by", "alice",
                         *rig.common())
    assert code == 0, err
    return folder, out


def test_enroll_nonce_and_verify_pass_end_to_end(rig, capsys):
    folder, out = _enroll(rig, capsys)
    assert out.startswith("%s: enrolled (AK " % NODE)
    record = ledger_store(rig.root).get(NODE)
    with open(os.path.join(folder, "ak.pem")) as handle:
        assert record["ak_pem"] == handle.read()       # the AK tpm2-tools made, in the ledger
    assert (record["enrolled_by"], record["reason"]) == ("alice", "first enrollment")
    assert not os.listdir(os.path.join(rig.state, "challenges"))      # the challenge was spent
    code, nonce, _err = cli(capsys, "nonce", NODE, "--state-dir", rig.state)
    assert code == 0 and re.match(r"^[0-9a-f]{40}\n$", nonce)
    assert stat.S_IMODE(os.stat(os.path.join(rig.state, "nonces.json")).st_mode) == 0o600
    code, out, err = cli(capsys, *rig.verify_argv(rig.quote(folder, nonce.strip()), "--event-log",
                                                  rig.path("boot.log.yaml"), "--json"))
    assert code == 0, err
    result = json.loads(out)
    assert result["result"] == "pass" and result["event_log"] is True
    assert result["checked"] == ["sha256:%d" % i for i in (0, 1, 2, 7, 8, 9)]
    # the same quote again is a replay
    code, out, err = cli(capsys, *rig.verify_argv(rig.quote(folder, nonce.strip())))
    assert code == 3 and len(err) == 1 and err[0].startswith("gpufleet attest verify: refused (replayed):")


def test_a_tampered_boot_is_refused_naming_the_pcr_and_the_event(rig, capsys):
    folder, _out = _enroll(rig, capsys)
    rig.tpm.tool("tpm2_pcrextend", "9:sha256=" + hashlib.sha256(b"/boot/evil-initrd").hexdigest())
    code, nonce, _err = cli(capsys, "nonce", NODE, "--state-dir", rig.state)
    code, out, err = cli(capsys, *rig.verify_argv(rig.quote(folder, nonce.strip()), "--json"))
    assert code == 3 and "refused (pcr_mismatch)" in err[0] and "PCR sha256:9 is" in err[0]
    assert json.loads(out)["pcrs"] == ["sha256:9"]
    # references taken after the tampering: the quote passes, but the boot's event log does not reproduce it
    code, nonce, _err = cli(capsys, "nonce", NODE, "--state-dir", rig.state)
    rig.sign_references()
    code, out, err = cli(capsys, *rig.verify_argv(rig.quote(folder, nonce.strip()), "--event-log",
                                                  rig.path("boot.log.yaml")))
    assert code == 3 and "refused (event_log_mismatch)" in err[0] and "sha256:9" in err[0]


def test_a_quote_by_an_ak_never_enrolled_is_refused(rig, capsys):
    _enroll(rig, capsys)
    folder = rig.path("fresh-ak")
    rig.tpm.create_ak(folder)
    code, nonce, _err = cli(capsys, "nonce", NODE, "--state-dir", rig.state)
    code, _out, err = cli(capsys, *rig.verify_argv(rig.quote(folder, nonce.strip())))
    assert code == 3 and "refused (bad_signature)" in err[0]


def test_a_node_never_enrolled_is_refused(rig, capsys):
    folder = rig.path("node")
    rig.tpm.create_ak(folder)
    code, nonce, _err = cli(capsys, "nonce", NODE, "--state-dir", rig.state)
    code, _out, err = cli(capsys, *rig.verify_argv(rig.quote(folder, nonce.strip())))
    # the ledger file does not exist yet: one line naming it
    assert code == 1 and len(err) == 1 and "No lifecycle ledger at %s" % rig.ledger in err[0]
    ledger_store(rig.root).ledger.close()
    code, nonce, _err = cli(capsys, "nonce", NODE, "--state-dir", rig.state)
    code, _out, err = cli(capsys, *rig.verify_argv(rig.quote(folder, nonce.strip())))
    assert code == 3 and "refused (not_enrolled)" in err[0]


def test_a_new_ak_in_the_enrolled_tpm_needs_reenrollment(rig, capsys):
    _enroll(rig, capsys)
    code, _out, err = cli(capsys, *rig.challenge_argv(rig.path("again")))
    assert code == 4 and len(err) == 1 and "refused (ak_changed)" in err[0]
    code, out, _err = cli(capsys, "show", NODE, "--ledger", rig.ledger, "--history", "--json")
    assert code == 0 and len(json.loads(out)) == 1


def test_kept_enrollment_when_the_enrolled_ak_is_presented(rig, capsys):
    folder, _out = _enroll(rig, capsys)
    rig.tpm.tool("tpm2_readpublic", "-c", os.path.join(folder, "ak.ctx"), "-f", "tss", "-o",
                 rig.path("kept-ak.pub"))
    rig.tpm.flush()
    argv = ["enroll-challenge", NODE, "--ek-cert", rig.path("node-ek.der"), "--ek-ca-bundle",
            rig.path("bundle.pem"), "--ak-public", rig.path("kept-ak.pub"), "--credential-out",
            rig.path("unused.cred"), "--json"] + rig.common()
    code, out, err = cli(capsys, *argv)
    assert code == 0, err
    assert json.loads(out)["decision"] == "keep" and not os.path.exists(rig.path("unused.cred"))


def test_a_swapped_tpm_is_refused_until_reenrolled_with_a_reason(rig, capsys, tmp_path_factory, vendor_ca):
    _enroll(rig, capsys)
    swapped = SoftTpm(str(tmp_path_factory.mktemp("swap")), vendor_ca).start()
    try:
        folder = rig.path("swapped")
        code, _out, err = cli(capsys, *rig.challenge_argv(folder, swapped))
        assert code == 4 and "refused (ek_changed)" in err[0] and "--reenroll --reason" in err[0]
        code, _out, err = cli(capsys, *rig.challenge_argv(folder, swapped, "--reenroll"))
        assert code == 2 and "needs a reason" in err[0]
        code, _out, err = cli(capsys, *rig.challenge_argv(folder, swapped, "--reenroll", "--reason",
                                                          "TPM replaced, ticket 7"))
        assert code == 0, err
        code, out, err = cli(capsys, "enroll-finish", NODE, "--secret", rig.activate(folder, swapped), "--by", "bob",
                             *rig.common())
        assert code == 0 and out.startswith("%s: re-enrolled" % NODE), err
    finally:
        swapped.stop()
    code, out, _err = cli(capsys, "show", NODE, "--ledger", rig.ledger, "--history", "--json")
    old, new = json.loads(out)
    assert old["replaced_by"] == new["id"] and old["ek_fingerprint"] != new["ek_fingerprint"]
    assert (new["enrolled_by"], new["reason"]) == ("bob", "TPM replaced, ticket 7")


def test_a_wrong_secret_is_refused_and_spends_the_challenge(rig, capsys):
    folder = rig.path("node")
    code, _out, err = cli(capsys, *rig.challenge_argv(folder))
    assert code == 0, err
    wrong = rig.write("wrong.out", b"x" * 32)
    code, _out, err = cli(capsys, "enroll-finish", NODE, "--secret", wrong, *rig.common())
    assert code == 3 and "refused (activation_failed)" in err[0]
    code, _out, err = cli(capsys, "enroll-finish", NODE, "--secret", rig.activate(folder), *rig.common())
    assert code == 3 and "refused (no_challenge)" in err[0]
    assert ledger_store(rig.root).get(NODE) is None


@pytest.mark.parametrize("option", ["--ek-cert", "--ak-public", "--ek-ca-bundle"])
def test_a_missing_input_file_is_one_line_naming_the_option(rig, capsys, option):
    argv = rig.challenge_argv(rig.path("node"))
    argv[argv.index(option) + 1] = rig.path("missing")
    code, _out, err = cli(capsys, *argv)
    assert code == 2 and len(err) == 1 and ("cannot read %s" % option) in err[0] and "fix:" in err[0]


def test_a_bad_node_name_and_a_bad_certificate_are_clear(rig, capsys):
    code, _out, err = cli(capsys, "nonce", "../etc", "--state-dir", rig.state)
    assert code == 2 and len(err) == 1 and "is not usable" in err[0]
    argv = rig.challenge_argv(rig.path("node"))
    argv[argv.index("--ek-cert") + 1] = rig.write("garbage.der", b"not a certificate")
    code, _out, err = cli(capsys, *argv)
    assert code == 3 and len(err) == 1 and "does not parse" in err[0]


def test_exit_codes_are_in_the_help(capsys):
    with pytest.raises(SystemExit):
        cli_main.main(["attest", "--help"])
    out = capsys.readouterr().out
    for code in (3, 4):
        assert re.search(r"^\s+%d\s+refused" % code, out, re.M), out


PCRREAD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tpm2_pcrread", "5.4-sha256-0-7.txt")


def _keypair(tmp_path, name):
    key = signing.generate_key("ecdsa-p256")
    signing.write_keypair(key, str(tmp_path / (name + ".key")), str(tmp_path / (name + ".pub")))
    with open(str(tmp_path / (name + ".pub")), "rb") as handle:
        return str(tmp_path / (name + ".key")), handle.read()


def test_references_records_a_qualified_node_signed_and_adds_to_the_file(tmp_path, capsys):
    key, public = _keypair(tmp_path, "image")
    out = str(tmp_path / "refs.json")
    record = ["references", "--pcrread", PCRREAD, "--key", key, "--out", out, "--image-version", "2026.05.1"]
    code, stdout, err = cli(capsys, *(record + ["--firmware-version", "1.4.2"]))
    assert code == 0, err
    assert stdout.startswith("%s: references of image 2026.05.1, firmware 1.4.2 (sha256:0, " % out)
    pcrs = references.load_references(out, public, "2026.05.1", "1.4.2")
    assert pcrs["sha256"]["4"] == "c05ddae9b2bcc23fbba457c2323c2dfb9075f170de2e0ac49d7da63546bc6d35"
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    code, stdout, err = cli(capsys, *(record + ["--firmware-version", "1.5.0", "--json"]))
    assert code == 0 and json.loads(stdout)["entries"] == 2
    assert references.load_references(out, public, "2026.05.1", "1.4.2") == pcrs     # the first entry kept
    code, _out, err = cli(capsys, *(record + ["--firmware-version", "1.5.0"]))
    assert code == 1 and "already has an entry for image 2026.05.1 with firmware 1.5.0" in err[0]
    assert cli(capsys, *(record + ["--firmware-version", "1.5.0", "--replace"]))[0] == 0


def test_references_refuses_a_file_of_another_key_and_input_that_is_no_pcrread(tmp_path, capsys):
    key, _public = _keypair(tmp_path, "image")
    other, _other_public = _keypair(tmp_path, "other")
    out = str(tmp_path / "refs.json")
    argv = ["references", "--pcrread", PCRREAD, "--out", out, "--image-version", "v1", "--firmware-version", "f1"]
    assert cli(capsys, *(argv + ["--key", other]))[0] == 0
    code, _out, err = cli(capsys, *(argv + ["--key", key, "--firmware-version", "f2"]))
    assert code == 1 and "not by the trusted image key" in err[0]
    bad = tmp_path / "pcrs.txt"
    bad.write_text("ERROR: Esys_PCR_Read(0x18B) - tcti:IO failure\n")
    code, _out, err = cli(capsys, "references", "--pcrread", str(bad), "--key", key, "--out", str(tmp_path / "n.json"),
                          "--image-version", "v1", "--firmware-version", "f1")
    assert code == 2 and "line 1 is not tpm2_pcrread output" in err[0]
    assert not os.path.exists(str(tmp_path / "n.json"))
