"""TPM quote against a real software TPM (swtpm) with tpm2-tools, through the gate's attestation phase."""
import signal
import socket
import subprocess
import time

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.phases import GateContext, run_gate
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.runner import Runner
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.profile import profile_from_dict
from tests.helpers import need_tool

pytestmark = pytest.mark.integration

HOST = "127.0.30.7"  # the gate area's loopback range
ZERO = "00" * 32
RELEASE = 'VERSION="2026.06.2"\nBUILD_ID="b1"\nPINS_SHA256="abc"\n'


def free_port():
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


@pytest.fixture
def swtpm(tmp_path):
    for tool in ("swtpm", "tpm2_quote", "tpm2_checkquote", "tpm2_createak", "tpm2_pcrextend"):
        need_tool(tool)
    port = free_port()
    state = tmp_path / "state"
    state.mkdir()
    proc = subprocess.Popen(["swtpm", "socket", "--tpm2", "--tpmstate", "dir=%s" % state,
                             "--server", "type=tcp,port=%d,bindaddr=%s" % (port, HOST),
                             "--ctrl", "type=tcp,port=%d,bindaddr=%s" % (port + 1, HOST),
                             "--flags", "not-need-init,startup-clear"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    for _attempt in range(50):
        try:
            socket.create_connection((HOST, port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    yield "swtpm:host=%s,port=%d" % (HOST, port)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=10)


def attest(tmp_path, tcti, expected_pcrs, nonce="0011223344556677"):
    release = tmp_path / "image-release"
    release.write_text(RELEASE)
    profile = profile_from_dict({"profile": "t", "checks": {"gpu_count": {"equals": 8, "unit": "count"}}}, "t")
    options = {"image_release_path": str(release), "expected_release": {"VERSION": "2026.06.2"},
               "tpm_quote": {"pcrs": "sha256:0,1,2,7", "nonce": nonce, "tcti": tcti, "expected_pcrs": expected_pcrs}}
    ctx = GateContext(profile, runner=Runner(), options=options)
    outcome = run_gate(ctx, phases=["attestation"])
    return [r for r in outcome["phases"][0]["results"] if r.name == "tpm_quote"][0]


def test_quote_verifies_and_a_changed_pcr_fails(tmp_path, swtpm):
    result = attest(tmp_path, swtpm, {0: ZERO, 7: ZERO})
    assert result.verdict == "pass", result.reason
    assert dict(result.measured)["sha256:1"] == ZERO
    extend = subprocess.run(["tpm2_pcrextend", "-T", swtpm, "7:sha256=" + "ab" * 32], capture_output=True, text=True,
                            check=False)
    assert extend.returncode == 0, extend.stderr
    result = attest(tmp_path, swtpm, {0: ZERO, 7: ZERO}, nonce="8899aabbccddeeff")
    assert result.verdict == "fail" and "PCR sha256:7 is " in result.reason and "expected " + ZERO in result.reason


def test_unreachable_tpm_fails_closed(tmp_path):
    need_tool("tpm2_createek")
    result = attest(tmp_path, "swtpm:host=%s,port=%d" % (HOST, free_port()), {0: ZERO})
    assert result.verdict == "fail" and result.measured is None and "tpm2_createek exited" in result.reason
