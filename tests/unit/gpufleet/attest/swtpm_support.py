"""Real software TPMs for the attestation tests: swtpm on TCP, its EK certificate from swtpm_localca.

Each ``LocalCa`` is a fresh CA (its own config and state folder, never /var/lib/swtpm-localca);
each ``SoftTpm`` is a fresh TPM state manufactured with that CA's EK certificate. The node side
of every exchange runs tpm2-tools against the swtpm through ``-T swtpm:host=127.0.0.1,port=P``.
"""
import os
import random
import shutil
import socket
import subprocess
import time

from tests.helpers import need

TOOLS = {"swtpm": "swtpm", "swtpm_setup": "swtpm-tools", "swtpm_localca": "swtpm-tools",
         "tpm2_createek": "tpm2-tools", "tpm2_makecredential": "tpm2-tools", "tpm2_quote": "tpm2-tools",
         "tpm2_eventlog": "tpm2-tools"}
EK_CERT_INDEX = "0x1c00002"  # TCG: the RSA 2048 EK certificate's NV index
EK_HANDLE = "0x81010001"  # TCG: the persistent RSA EK
QUOTED_PCRS = "sha256:0,1,2,7"


def require_tools():
    missing = sorted(set(pkg for tool, pkg in TOOLS.items() if shutil.which(tool) is None))
    if missing:
        # a skip on a developer's machine, a failure in CI (tests/helpers.need)
        need(False, "needs the Debian package(s) %s (apt-get install %s)" % (", ".join(missing), " ".join(missing)))


def run(argv, **kwargs):
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, check=False, **kwargs)
    if done.returncode != 0:
        raise AssertionError("%s exited %s: %s" % (argv[0], done.returncode, done.stderr.decode()[-500:]))
    return done


def _free_port_pair():
    for _try in range(50):
        port = random.randrange(2300, 2398, 2)
        try:
            for candidate in (port, port + 1):
                with socket.socket() as probe:
                    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    probe.bind(("127.0.0.1", candidate))
        except OSError:
            continue
        return port
    raise AssertionError("no free TCP port pair in 2300-2399 for swtpm")


class LocalCa:
    """A swtpm_localca CA in ``folder``; ``bundle`` is its intermediate + root, PEM."""

    def __init__(self, folder):
        self.folder = folder
        state = os.path.join(folder, "state")
        os.makedirs(state)
        self.config = os.path.join(folder, "swtpm_setup.conf")
        localca = os.path.join(folder, "swtpm-localca.conf")
        with open(localca, "w") as handle:
            handle.write("statedir = %s\nsigningkey = %s/signkey.pem\nissuercert = %s/issuercert.pem\n"
                         "certserial = %s/certserial\n" % (state, state, state, state))
        options = os.path.join(folder, "swtpm-localca.options")
        with open(options, "w") as handle:
            handle.write("--platform-manufacturer gpufleet\n--platform-version 2.1\n--platform-model test\n")
        with open(self.config, "w") as handle:
            handle.write("create_certs_tool = %s\ncreate_certs_tool_config = %s\ncreate_certs_tool_options = %s\n"
                         "active_pcr_banks = sha256\n" % (shutil.which("swtpm_localca"), localca, options))
        self.state = state

    @property
    def bundle(self):
        parts = []
        for name in ("issuercert.pem", "swtpm-localca-rootca-cert.pem"):
            with open(os.path.join(self.state, name), "rb") as handle:
                parts.append(handle.read())
        return b"".join(parts)


class SoftTpm:
    """A manufactured swtpm (EK + EK certificate from ``ca``) serving on 127.0.0.1.

    ``copy_of``: the state folder of another SoftTpm that was never started; this one starts
    from a copy of it (the same EK and certificate, fresh PCRs) instead of its own swtpm_setup,
    which costs most of a second of key generation.
    """

    def __init__(self, folder, ca, copy_of=None):
        self.folder = folder
        self.state = os.path.join(folder, "state")
        if copy_of:
            shutil.copytree(copy_of, self.state)
        else:
            os.makedirs(self.state)
            run(["swtpm_setup", "--tpm2", "--create-ek-cert", "--create-platform-cert", "--tpmstate", self.state,
                 "--config", ca.config, "--overwrite"])
        self.process = None
        self.port = None

    def start(self):
        self.port = _free_port_pair()
        self.process = subprocess.Popen(
            ["swtpm", "socket", "--tpm2", "--server", "type=tcp,port=%d,bindaddr=127.0.0.1" % self.port,
             "--ctrl", "type=tcp,port=%d,bindaddr=127.0.0.1" % (self.port + 1), "--tpmstate",
             "dir=%s" % self.state, "--flags", "startup-clear"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError:
                if self.process.poll() is not None:
                    raise AssertionError("swtpm exited %s on port %d" % (self.process.returncode, self.port))
                time.sleep(0.05)
        raise AssertionError("swtpm did not listen on port %d" % self.port)

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def tool(self, name, *args):
        return run([name, "-T", "swtpm:host=127.0.0.1,port=%d" % self.port] + list(args))

    def flush(self):
        self.tool("tpm2_flushcontext", "-t")
        self.tool("tpm2_flushcontext", "-s")

    def ek_certificate(self):
        return self.tool("tpm2_nvread", EK_CERT_INDEX).stdout

    def create_ak(self, folder, algorithm="ecc"):
        """Node side: a new AK under the EK; returns the AK's TPM2B_PUBLIC bytes.

        The EK is the persistent one swtpm_setup made (what tpm2_createek would recreate from
        the same seed, minus a key generation per call). ECC by default: an RSA AK costs about
        a second of key generation in swtpm on a loaded machine.
        """
        os.makedirs(folder, exist_ok=True)
        path = lambda name: os.path.join(folder, name)  # noqa: E731
        self.tool("tpm2_createak", "-C", EK_HANDLE, "-c", path("ak.ctx"), "-G", algorithm, "-g", "sha256",
                  "-s", {"ecc": "ecdsa", "rsa": "rsassa"}[algorithm], "-u", path("ak.pem"), "-f", "pem",
                  "-n", path("ak.name"))
        self.flush()
        self.tool("tpm2_readpublic", "-c", path("ak.ctx"), "-f", "tss", "-o", path("ak.tss"))
        self.flush()
        with open(path("ak.tss"), "rb") as handle:
            return handle.read()

    def activate(self, folder, blob):
        """Node side of credential activation; the decrypted secret, or None when the TPM refuses."""
        path = lambda name: os.path.join(folder, name)  # noqa: E731
        with open(path("cred.in"), "wb") as handle:
            handle.write(blob)
        self.tool("tpm2_startauthsession", "--policy-session", "-S", path("session.ctx"))
        try:
            self.tool("tpm2_policysecret", "-S", path("session.ctx"), "-c", "e")
            try:
                self.tool("tpm2_activatecredential", "-c", path("ak.ctx"), "-C", EK_HANDLE, "-i",
                          path("cred.in"), "-o", path("cred.out"), "-P", "session:%s" % path("session.ctx"))
            except AssertionError:
                return None
        finally:
            self.flush()
        with open(path("cred.out"), "rb") as handle:
            return handle.read()

    def quote(self, folder, nonce, pcrs=QUOTED_PCRS):
        """Node side: quote with the AK in ``folder``; (message, signature, PCR values) bytes."""
        path = lambda name: os.path.join(folder, name)  # noqa: E731
        self.tool("tpm2_quote", "-c", path("ak.ctx"), "-l", pcrs, "-q", nonce, "-m", path("quote.msg"), "-s",
                  path("quote.sig"), "-o", path("quote.pcrs"), "-F", "values", "-g", "sha256")
        self.flush()
        out = []
        for name in ("quote.msg", "quote.sig", "quote.pcrs"):
            with open(path(name), "rb") as handle:
                out.append(handle.read())
        return tuple(out)


def ledger_store(folder):
    """An enrollment store on a fresh SQLite ledger in ``folder`` (the store the controller uses)."""
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
    from gpufleet.attest.enroll import EnrollmentStore

    os.makedirs(str(folder), exist_ok=True)
    return EnrollmentStore(Ledger(os.path.join(str(folder), "ledger.sqlite")))


def enroll_node(store, node, ek_cert, ca_bundle, ak_public, activate, who="gpufleet", reason=None, reenroll=False,
                run=subprocess.run, now=None):
    """Both halves of an enrollment in one call, as ``enroll-challenge`` and ``enroll-finish`` run them.
    ``activate(credential_blob) -> secret`` runs ``tpm2_activatecredential`` on the node. Returns
    {"decision", "record", "ek"}; KEEP activates nothing and keeps the enrolled AK."""
    from gpufleet.attest import enroll
    pending = enroll.challenge(store, node, ek_cert, ca_bundle, ak_public, reenroll=reenroll, reason=reason,
                               run=run, now=now)
    if pending["decision"] == enroll.KEEP:
        return {"decision": enroll.KEEP, "record": pending["record"], "ek": pending["ek"]}
    record = enroll.finish(store, node, pending, activate(pending["credential"]), who)
    return {"decision": pending["decision"], "record": record, "ek": pending["ek"]}
