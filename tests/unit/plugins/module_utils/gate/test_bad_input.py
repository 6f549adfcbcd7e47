"""Bad input at volume (hypothesis): every gate parser and the profile loader.

Properties, for generated text and for mutations of every fixture (real captures from
../shared when present, the hand-made ones beside these tests):

- no traceback: a parser returns a result or raises a gate error (``GateError`` family);
- never a pass on garbage: random text through the probe's extractor and the judge,
  against a profile whose limits any real output meets, passes no check;
- always an error naming the field or line: a ``ParseError`` says what was expected, and
  when it gives a line number, the excerpt is that line of the input.

Counts: ``EXAMPLES`` inputs per test (GPUFLEET_HYPOTHESIS_EXAMPLES raises it), derandomized
so CI replays the same inputs; docs/reliability.md records the numbers.
"""
import functools
import glob
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.attestation import parse_image_release
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import GateError, ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.measure import parse_nvidia_smi_any
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.dcgmi import parse_dcgmi
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.fio import parse_fio
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.gpu_burn import parse_gpu_burn
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.iperf3 import parse_iperf3
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.kernel_log import parse_kernel_log
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nccl import parse_nccl
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nvbandwidth import parse_nvbandwidth
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nvidia_smi import (
    parse_nvidia_smi_csv, parse_nvidia_smi_q)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nvidia_smi_xml import parse_nvidia_smi_xml
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.nvlink import parse_nvlink_status
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers.perftest import parse_perftest
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.phases import GateContext, judge_probe
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.probes import PROBES
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.profile import profile_from_dict
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.soak import parse_iterations
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.tpm import parse_quote
from tests.helpers import SHARED_FIXTURES

EXAMPLES = int(os.environ.get("GPUFLEET_HYPOTHESIS_EXAMPLES", "200"))
FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
REAL = os.path.join(SHARED_FIXTURES, "real-outputs")
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# parser -> fixture globs (own fixtures beside the tests, real captures in ../shared)
PARSERS = {
    "dcgmi": (parse_dcgmi, ["dcgmi/*"], ["dcgmi_*"]),
    "fio": (parse_fio, ["fio/*"], ["fio_*"]),
    "gpu_burn": (parse_gpu_burn, ["gpu_burn/*"], ["gpu_burn_*"]),
    "iperf3": (parse_iperf3, ["iperf3/*"], ["iperf3_*"]),
    "kernel_log": (parse_kernel_log, ["dmesg/*"], []),
    "nccl": (parse_nccl, ["nccl/*"], ["nccl_*"]),
    "nvbandwidth": (parse_nvbandwidth, ["nvbandwidth/*"], ["nvbandwidth_*"]),
    "nvidia_smi_csv": (parse_nvidia_smi_csv, ["nvidia_smi/*csv*"], ["nvidia_smi_query_*"]),
    "nvidia_smi_q": (parse_nvidia_smi_q, ["nvidia_smi/*-q-*"], ["nvidia_smi_q_*"]),
    "nvidia_smi_xml": (parse_nvidia_smi_xml, ["nvidia_smi/*xml*"], []),
    "nvidia_smi_any": (parse_nvidia_smi_any, ["nvidia_smi/*csv*", "nvidia_smi/*xml*"], []),
    "nvlink": (parse_nvlink_status, ["nvidia_smi/*nvlink*"], ["nvidia_smi_nvlink_*"]),
    "perftest": (parse_perftest, ["perftest/*"], []),
    "image_release": (parse_image_release, [], []),
    "tpm_quote": (parse_quote, [], []),
    "iterations": (lambda text: parse_iterations(text, "soak"), [], []),
}


@functools.lru_cache(maxsize=None)
def _read_all(own, real):
    paths = [p for g in own for p in glob.glob(os.path.join(FIX, g))]
    paths += [p for g in real for p in glob.glob(os.path.join(REAL, g))]
    texts = []
    for path in sorted(paths):
        with open(path) as handle:
            texts.append(handle.read())
    return tuple(texts)


def _samples(own, real):
    return _read_all(tuple(own), tuple(real))


def _check_error(exc, text):
    """The error is a gate error; a ParseError names what it expected and points at a real line."""
    assert isinstance(exc, GateError), type(exc)
    assert exc.msg
    if isinstance(exc, ParseError):
        assert exc.expected and exc.expected in exc.msg
        if exc.line_no is not None and exc.excerpt is not None:
            lines = text.split("\n")
            assert 1 <= exc.line_no <= len(lines), (exc.line_no, len(lines))
            excerpt = exc.excerpt[:-3] if exc.excerpt.endswith("...") else exc.excerpt
            assert lines[exc.line_no - 1].rstrip("\r\n").startswith(excerpt), (exc.line_no, exc.excerpt)


def _parse(parser, text):
    try:
        parser(text)
    except GateError as exc:
        _check_error(exc, text)
    # any other exception propagates and fails the test with its traceback


# Text that looks like tool output: digits, units, separators and words the parsers key on.
TOKENS = st.sampled_from(["0", "-1", "8", "3.5", "N/A", "[N/A]", "nan", "inf", "1e309", "GPU", "GPU 0:", "OK",
                          "FAULTY", "#", "# Avg bus bandwidth :", "# Out of bounds values : 0 OK", "size", "redop",
                          "{", "}", "[", "]", ":", ",", '"status"', "Pass", "Fail", "<gpu>", "</gpu>", "<?xml",
                          "name", "NVRM: Xid (PCI:0000:18:00): 79,", "GB/s",
                          "Link 0: 26.562 GB/s", "SUM", "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)",
                          "\t", " ", "\n", "\r\n", "é", "\x00"])
# A kernel-log line prefix makes any text a (clean) kernel log: only the no-crash tests add them.
# Likewise a CSV header naming "index" above a number is a correct one-GPU nvidia-smi query.
KERNEL_TOKENS = st.sampled_from(["[  4.1] ", "gpu-n07 kernel: ", "<6>[    0.000000] ", "index", "index, name\n"])
LINEY = st.lists(TOKENS, max_size=60).map("".join)
GARBAGE = st.one_of(st.text(max_size=400), LINEY)
ANY_TEXT = st.one_of(GARBAGE, st.lists(st.one_of(TOKENS, KERNEL_TOKENS), max_size=60).map("".join))


def _mutate(text, data):
    """One random edit of a real output: cut, drop/duplicate/shuffle a line, or replace a token."""
    lines = text.split("\n")
    kind = data.draw(st.sampled_from(["cut", "drop", "dup", "swap", "token", "insert"]))
    i = data.draw(st.integers(0, max(len(lines) - 1, 0)))
    if kind == "cut":
        return text[:data.draw(st.integers(0, len(text)))]
    if kind == "drop":
        return "\n".join(lines[:i] + lines[i + 1:])
    if kind == "dup":
        return "\n".join(lines[:i + 1] + lines[i:])
    if kind == "swap":
        j = data.draw(st.integers(0, max(len(lines) - 1, 0)))
        lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines)
    if kind == "insert":
        return "\n".join(lines[:i] + [data.draw(LINEY)] + lines[i:])
    words = lines[i].split(" ") if lines else [""]
    k = data.draw(st.integers(0, len(words) - 1))
    words[k] = data.draw(TOKENS)
    lines[i] = " ".join(words)
    return "\n".join(lines)


@pytest.mark.parametrize("name", sorted(PARSERS))
@SETTINGS
@given(text=ANY_TEXT)
def test_garbage_never_crashes_a_parser(name, text):
    _parse(PARSERS[name][0], text)


@pytest.mark.parametrize("name", sorted(n for n, (_p, own, real) in PARSERS.items() if own or real))
@SETTINGS
@given(data=st.data())
def test_mutated_real_outputs_never_crash_a_parser(name, data):
    parser, own, real = PARSERS[name]
    samples = _samples(own, real)
    if not samples:
        pytest.skip("no fixture for %s" % name)
    _parse(parser, _mutate(data.draw(st.sampled_from(samples)), data))


# Limits any healthy capture meets, so a pass can only come from the parser accepting garbage.
LENIENT = profile_from_dict({"profile": "lenient", "checks": {
    "gpu_count": {"equals": 1, "unit": "count"}, "gpu_model": {"one_of": ["x"], "unit": "name"},
    "ecc_uncorrectable": {"max": 1000000, "unit": "count"}, "retired_pages": {"max": 1000000, "unit": "pages"},
    "retired_pages_pending": {"max": 72, "unit": "gpus"}, "row_remap_pending": {"max": 72, "unit": "gpus"},
    "row_remap_failures": {"max": 72, "unit": "gpus"}, "xid": {"deny": [79], "unit": "xid"},
    "dcgm_diag": {"level": 1, "unit": "tests", "max_failures": 1000},
    "gpu_burn": {"min": 0.001, "unit": "gpus"}, "nvlink_links": {"min": 0.001, "unit": "links"},
    "nvbandwidth_d2d": {"min": 0.001, "unit": "GB/s"}, "nvbandwidth_h2d": {"min": 0.001, "unit": "GB/s"},
    "nvbandwidth_d2h": {"min": 0.001, "unit": "GB/s"},
    "nccl_single_node": {"min": 0.001, "unit": "GB/s", "message_size": 1, "min_message_size": 1},
    "iperf3_tcp": {"min": 0.001, "unit": "Gb/s"}, "ib_write_bw": {"min": 0.001, "unit": "Gb/s"},
    "fio_seq_read": {"min": 0.001, "unit": "MB/s"}, "fio_seq_write": {"min": 0.001, "unit": "MB/s"},
    "fio_rand_read": {"min": 0.001, "unit": "IOPS"}, "fio_rand_write": {"min": 0.001, "unit": "IOPS"},
    "reference_job": {"min": 0.001, "unit": "x", "metric": "m"}, "soak": {"min": 0.001, "unit": "x", "metric": "m"},
}}, "lenient")
JUDGED = [p for p in PROBES if p.mode not in ("file", "input", "tpm")]  # local checks: see test_attestation/tpm


@pytest.mark.parametrize("probe", JUDGED, ids=lambda p: p.name)
@SETTINGS
@given(text=GARBAGE)
def test_garbage_never_passes_a_check(probe, text):
    checks = tuple(c for c in probe.checks if LENIENT.has(c))
    texts = {"mlx5_0": text} if probe.mode == "per_hca" else {"": text}
    for result in judge_probe(probe, checks, texts, GateContext(LENIENT)):
        assert not result.passed, (result.name, result.reason, text)
        assert result.reason.startswith(result.name + ": ")


def test_a_real_output_passes_the_lenient_profile():
    """The garbage property above can fail: the same path passes on a real output."""
    probe = [p for p in JUDGED if p.name == "nccl_single_node"][0]
    (text,) = _samples(["nccl/2.14-pass-8xh100-single-node.txt"], [])
    (result,) = judge_probe(probe, probe.checks, {"": text}, GateContext(LENIENT))
    assert result.passed, result.reason


# --- profiles -------------------------------------------------------------------------------

YAML_VALUE = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10 ** 12, 10 ** 12), st.floats(allow_nan=True),
              st.text(max_size=20), st.sampled_from(["8G", "16G", "GB/s", "count", "tests", "0", "-1"])),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.one_of(st.text(max_size=12), st.integers()), inner, max_size=4)),
    max_leaves=12)
CHECK_NAMES = st.sampled_from(sorted(LENIENT.threshold(n).check for n, _t in LENIENT.checks) + ["image_release", "x"])
SPEC_KEYS = st.sampled_from(["min", "max", "equals", "one_of", "deny", "pins", "max_failures", "unit", "retries",
                             "message_size", "min_message_size", "level", "required", "allow_warnings",
                             "allow_skips", "hcas", "duration_s", "size", "runtime_s", "metric", "command", "nodes"])


def _load(data, name="p"):
    try:
        return profile_from_dict(data, name)
    except GateError as exc:
        assert exc.msg.startswith('Threshold profile "%s" is invalid at "' % name), exc.msg
        return exc


@SETTINGS
@given(data=YAML_VALUE)
def test_any_yaml_value_is_a_profile_or_a_profile_error(data):
    _load(data)


@SETTINGS
@given(checks=st.dictionaries(CHECK_NAMES, st.dictionaries(SPEC_KEYS, YAML_VALUE, max_size=5), max_size=4))
def test_random_checks_load_or_name_the_check(checks):
    result = _load({"profile": "p", "checks": checks})
    if isinstance(result, GateError):
        assert result.key == "checks" or any(result.key.startswith("checks.%s" % c) for c in checks), result.key


@functools.lru_cache(maxsize=None)
def _shipped_profile(name):
    """A shipped profile's parsed YAML, read once per file: parsing it per example was most of the test's time."""
    import yaml
    from tests.unit.plugins.module_utils.gate.gate_support import shipped_path
    with open(shipped_path(name)) as handle:
        return yaml.safe_load(handle)


@SETTINGS
@given(data=st.data())
def test_one_bad_value_in_a_shipped_profile_names_its_key(data):
    import copy
    from tests.unit.plugins.module_utils.gate.gate_support import SKU_PROFILES
    bad = copy.deepcopy(_shipped_profile(data.draw(st.sampled_from(SKU_PROFILES))))  # the cached tree stays intact
    bad["profile"] = "p"
    check = data.draw(st.sampled_from(sorted(bad["checks"])))
    key = data.draw(st.one_of(st.sampled_from(sorted(bad["checks"][check])), SPEC_KEYS))
    bad["checks"][check][key] = data.draw(YAML_VALUE)
    result = _load(bad)
    if isinstance(result, GateError):
        assert result.key.startswith("checks.%s" % check), (result.key, check, key)


@SETTINGS
@given(text=st.one_of(st.text(max_size=300), st.binary(max_size=300).map(lambda b: b.decode("latin-1"))))
def test_any_profile_file_loads_or_fails_with_a_profile_error(tmp_path_factory, text):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.profile import load_profile
    path = tmp_path_factory.mktemp("prof") / "p.yml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    try:
        load_profile(str(path))
    except GateError as exc:
        assert exc.msg.startswith('Threshold profile "p" is invalid at "')
