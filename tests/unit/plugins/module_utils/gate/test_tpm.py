"""TPM quote: parse tpm2-tools output, judge signature/nonce/PCRs, run the steps through a fake runner."""
import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate import tpm
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.probes import probe_by_name
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.phases import GateContext
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.runner import MISSING, ToolRun
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.profile import profile_from_dict

# Captured from tpm2-tools 5.4 against swtpm 0.7 (tpm2_quote -l sha256:0,7, then tpm2_checkquote).
RAW = (
    '### tpm2_quote\n'
    'quoted: ff54434780180022000b8943e3195e57d6ae9b926d952002b653565c7ce8b13437dd438031a41c93f5aa00100011'
    '2233445566778899aabbccddeeff000000000001d522000000010000000001201910230016363600000001000b0381000000'
    '20f5a5fd42d16a20302798ef6ed309979b43003d2320d9f0e8ea9831a92759fb4b\n'
    'signature:\n'
    '  alg: rsassa\n'
    '  sig: 9afde4466c6ed747e8da118a68986402a0fa861b33493f20eda759896d870f6d06534b3166cae10441ab9e5bab8cb'
    '54ed40f1bef926abfd47de7047ce7bc14fea9f791d931ddda42824c7bde85d25f042367ce6fa97419b5faa412d35b867278c'
    'bd1b70f497542937562b00014a9e47fc7f8fcbbaa3f6831189bba65da17455d519d9aecbcfe701dd38598ef6e7b7215a0a4a'
    '797c07c817e569d12a861c2f652b4190e9394fbe5731f2068652318e26f86e2d7e37e8f42eb49cd8c104056851883dce5997'
    '8a881042a1157d5a0c285822803394eb0e3939f2a7e620e6827e5eae021651fe60c6d41321af2857202599edea619186fcf7'
    'f0fe60876801c0a3cfb\n'
    'pcrs:\n'
    '  sha256:\n'
    '    0 : 0x0000000000000000000000000000000000000000000000000000000000000000\n'
    '    7 : 0x0000000000000000000000000000000000000000000000000000000000000000\n'
    'calcDigest: f5a5fd42d16a20302798ef6ed309979b43003d2320d9f0e8ea9831a92759fb4b\n'
    '### tpm2_checkquote rc=0\n'
    'pcrs:\n'
    '  sha256:\n'
    '    0 : 0x0000000000000000000000000000000000000000000000000000000000000000\n'
    '    7 : 0x0000000000000000000000000000000000000000000000000000000000000000\n'
    'sig: 9afde4466c6ed747e8da118a68986402a0fa861b33493f20eda759896d870f6d06534b3166cae10441ab9e5bab8cb54'
    'ed40f1bef926abfd47de7047ce7bc14fea9f791d931ddda42824c7bde85d25f042367ce6fa97419b5faa412d35b867278cbd'
    '1b70f497542937562b00014a9e47fc7f8fcbbaa3f6831189bba65da17455d519d9aecbcfe701dd38598ef6e7b7215a0a4a79'
    '7c07c817e569d12a861c2f652b4190e9394fbe5731f2068652318e26f86e2d7e37e8f42eb49cd8c104056851883dce59978a'
    '881042a1157d5a0c285822803394eb0e3939f2a7e620e6827e5eae021651fe60c6d41321af2857202599edea619186fcf7f0'
    'fe60876801c0a3cfb\n'
    '### nonce 00112233445566778899aabbccddeeff\n'
    '### ak.pem\n'
    '-----BEGIN PUBLIC KEY-----\n'
    'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAtBaoFnJTt4twhmwKcm7W\n'
    'ygeYB8/BHtbWjjSxrsBGIdmvtTAu93eM2s+AKOgskOnFfMYdKl5WdbJYbL6hmJSQ\n'
    'zA/tQ8st2IR3Kvu7xrpIFvQSboXHOhcIJAl+Pq8wwHCByp+mGHiE58ld1HlRiN4a\n'
    'L3BsYlPhf8PUSCk+Xhcm7tPtEP0Ou5NI3Wc+7nCVJMwabzSvHqb7Gp7NQdJic3tW\n'
    'NegMkIID3QN47mlen6JIxsovdtEvSbnGLtjgKX8cL1YTZKy0UC/b30/r0iQiVt0q\n'
    'Zbzi5bS7kyysPwd+rRgAzX+rt70L85uh4la5UZ2/OM9dvQfIN6QTQ05sHYvrOXvL\n'
    'WQIDAQAB\n'
    '-----END PUBLIC KEY-----\n'
)
ZERO = "00" * 32
NONCE = "00112233445566778899aabbccddeeff"


def test_parse_reads_pcrs_verification_and_nonce():
    found = tpm.parse_quote(RAW)
    assert found == {"pcrs": {"sha256:0": ZERO, "sha256:7": ZERO}, "verified": True, "nonce": NONCE}


@pytest.mark.parametrize("text", ["", "### tpm2_quote\npcrs:\n", RAW.replace("    0 : 0x", "    0 = ").replace(
    "    7 : 0x", "    7 = ")])
def test_parse_fails_closed(text):
    with pytest.raises(ParseError):
        tpm.parse_quote(text)


@pytest.mark.parametrize("text,settings,verdict,fragment", [
    (RAW, {"nonce": NONCE, "expected_pcrs": {0: ZERO, "sha256:7": "0x" + ZERO}}, "pass", "2 PCR(s) match"),
    (RAW, {"nonce": NONCE, "expected_pcrs": {7: "11" * 32}}, "fail", "PCR sha256:7 is 0000"),
    (RAW, {"nonce": NONCE, "expected_pcrs": {2: ZERO}}, "fail", "PCR sha256:2 is not quoted"),
    (RAW, {"nonce": "ff" * 16, "expected_pcrs": {0: ZERO}}, "fail", "not the controller's"),
    (RAW.replace("checkquote rc=0", "checkquote rc=1"), {"expected_pcrs": {0: ZERO}}, "fail", "rejected the quote"),
    (RAW, {"nonce": NONCE}, "fail", "no expected_pcrs"),
])
def test_judge(text, settings, verdict, fragment):
    result = tpm.judge_quote(tpm.parse_quote(text), settings)
    assert result.verdict == verdict and fragment in result.reason
    assert result.phase == "attestation" and result.name == "tpm_quote"


class FakeRunner:
    def __init__(self, fail=None):
        self.calls, self.fail = [], fail

    def run(self, probe, tool, args, timeout):
        self.calls.append([tool] + list(args))
        if tool == self.fail:
            return ToolRun(probe, [tool], None, "", "", 0.0, MISSING, "tpm_quote: tool %s was not found" % tool)
        if tool == "tpm2_createak":
            with open(args[args.index("-u") + 1], "w") as handle:
                handle.write("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
        if tool == "tpm2_quote":
            return ToolRun(probe, [tool], 0, RAW.split("### tpm2_checkquote", maxsplit=1)[0].split("\n", 1)[1], "", 0.1, None, "")
        if tool == "tpm2_checkquote":
            return ToolRun(probe, [tool], 0, "pcrs:\n", "", 0.1, None, "")
        return ToolRun(probe, [tool], 0, "", "", 0.1, "empty", "no output")  # flushcontext: silent


def ctx(runner, **settings):
    profile = profile_from_dict({"profile": "t", "checks": {"gpu_count": {"equals": 8, "unit": "count"}}}, "t")
    return GateContext(profile, runner=runner, options={"tpm_quote": dict({"expected_pcrs": {0: ZERO}}, **settings)})


def test_collect_runs_the_steps_in_order_and_cleans_up():
    runner = FakeRunner()
    runs = tpm.collect_quote(probe_by_name("tpm_quote"), ctx(runner, nonce=NONCE, tcti="swtpm:port=1"))
    assert runs[0].error is None and "### ak.pem\n-----BEGIN PUBLIC KEY-----" in runs[0].stdout
    tools = [c[0] for c in runner.calls]
    assert tools == ["tpm2_createek", "tpm2_flushcontext", "tpm2_createak", "tpm2_flushcontext", "tpm2_flushcontext",
                     "tpm2_quote", "tpm2_flushcontext", "tpm2_checkquote"]
    quote = runner.calls[5]
    assert quote[quote.index("-q") + 1] == NONCE and quote[-2:] == ["-T", "swtpm:port=1"]
    assert "-T" not in runner.calls[-1]  # tpm2_checkquote works offline and takes no TCTI
    assert not os.path.exists(os.path.dirname(quote[quote.index("-m") + 1]))
    found = tpm.parse_quote(runs[0].stdout)
    assert found["verified"] and found["nonce"] == NONCE


def test_a_failed_step_fails_closed_and_a_nonce_is_made_when_none_is_given():
    runs = tpm.collect_quote(probe_by_name("tpm_quote"), ctx(FakeRunner(fail="tpm2_createek")))
    assert runs[0].error == MISSING and "tpm2_createek was not found" in runs[0].reason
    runner = FakeRunner()
    tpm.collect_quote(probe_by_name("tpm_quote"), ctx(runner))
    nonce = runner.calls[5][runner.calls[5].index("-q") + 1]
    assert len(nonce) == 32 and int(nonce, 16) >= 0
