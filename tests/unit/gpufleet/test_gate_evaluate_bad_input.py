"""Bad input at volume (hypothesis) for ``gpufleet gate evaluate``: what a saved report folder holds.

Inputs: arbitrary bytes as a raw output (any probe's file, per-HCA files included), real and
hand-made captures with random bytes spliced in (bytes that are not UTF-8 among them), and
``inputs.json`` with one value replaced, deleted or added anywhere in its tree, or replaced
whole by any JSON value or by arbitrary bytes.

Property: the command exits 0 or 1 and never raises; it either writes a complete JSON report
(and prints "written:"), or prints one line "gpufleet gate: error: ..." naming the file, and
leaves no report and no temporary file. Random bytes never pass the check their file feeds.
Counts: ``EXAMPLES`` inputs per test (GPUFLEET_HYPOTHESIS_EXAMPLES changes it), derandomized;
the last test prints how many were tried (docs/reliability.md quotes them).
"""
import contextlib
import io
import json
import os

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet import main as cli_main
from tests.helpers import SHARED_FIXTURES
from tests.unit.gpufleet.parser_once import parser_built_once
from tests.yaml_mutations import VALUES, key_paths, mutate

EXAMPLES = int(os.environ.get("GPUFLEET_HYPOTHESIS_EXAMPLES", "150"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "plugins", "module_utils", "gate",
                   "fixtures")
REAL = os.path.join(SHARED_FIXTURES, "real-outputs")
TRIED = {"raw bytes": 0, "spliced captures": 0, "inputs.json": 0}

PROFILE = {"profile": "p", "checks": {
    "gpu_count": {"equals": 8, "unit": "count"}, "xid": {"deny": [48, 79], "unit": "xid"},
    "gpu_burn": {"min": 8, "unit": "gpus"}, "nvlink_links": {"min": 12, "unit": "links"},
    "nccl_single_node": {"min": 200, "unit": "GB/s", "message_size": "8G", "min_message_size": "1G"},
    "dcgm_diag": {"level": 3, "unit": "tests", "max_failures": 0},
    "ib_write_bw": {"min": 300, "unit": "Gb/s"}}}
# raw file name -> (the check it feeds, a capture it normally holds); the real captures are read
# from ../shared/fixtures/real-outputs (their sources: SOURCES.md there), the others are beside the gate tests.
RAW = {
    "image_release.txt": ("image_release", None),
    "nvidia_smi_query.txt": ("gpu_count", os.path.join(FIX, "nvidia_smi", "550-csv-8xh100-remap.txt")),
    "dmesg.txt": ("xid", os.path.join(FIX, "dmesg", "550-xid-79-and-48.txt")),
    "gpu_burn.txt": ("gpu_burn", os.path.join(REAL, "gpu_burn_8xA100_doubles_tc.txt")),
    "nvidia_smi_nvlink.txt": ("nvlink_links", os.path.join(REAL, "nvidia_smi_nvlink_status_8xA100_good.txt")),
    "nccl_single_node.txt": ("nccl_single_node", os.path.join(REAL, "nccl_all_reduce_8xA100_legacy_format.txt")),
    "dcgm_diag.txt": ("dcgm_diag", os.path.join(FIX, "dcgmi", "4.1-pass-8gpu.txt")),
    "ib_write_bw.mlx5_0.txt": ("ib_write_bw", os.path.join(FIX, "perftest", "6.10-gdr-400g-mlx5_0.txt")),
}
RELEASE = b'VERSION="2026.06.2"\nBUILD_ID="b1"\nPINS_SHA256="abc"\n'
INPUTS = {"expected_release": {"VERSION": "2026.06.2", "BUILD_ID": "b1"}, "node": "n7", "peers": ["n8", "n9"],
          "tpm_quote": None, "skip_checks": [], "hcas": ["mlx5_0"], "report_id": "n7-20260601T000000Z-abc123",
          "profile": "h100-sxm-8x", "timeouts": {"gpu_burn": 600}}


def _capture(path):
    """A capture's bytes; b"" when the shared captures are absent (the property still holds)."""
    if path is None:
        return RELEASE
    if not os.path.isfile(path):
        return b""
    with open(path, "rb") as handle:
        return handle.read()


CAPTURES = dict((name, _capture(path)) for name, (_check, path) in RAW.items())


def _folder(tmp_path_factory, raw=None, inputs=INPUTS):
    """A report folder holding every capture, ``raw`` ({name: bytes}) replacing some, and ``inputs``."""
    top = tmp_path_factory.mktemp("evaluate")
    folder = top / "report" / "raw"
    folder.mkdir(parents=True)
    for name, data in dict(CAPTURES, **(raw or {})).items():
        (folder / name).write_bytes(data)
    if inputs is not None:
        (top / "report" / "inputs.json").write_bytes(inputs if isinstance(inputs, bytes) else
                                                     json.dumps(inputs, default=str).encode())
    (top / "p.yml").write_text(yaml.safe_dump(PROFILE))
    return top


def _evaluate(top):
    """(exit code, report or None, stdout, stderr); any exception but the command's own fails the test."""
    out, err = io.StringIO(), io.StringIO()
    output = top / "out.json"
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), parser_built_once():
        code = cli_main.main(["gate", "evaluate", "--profile", str(top / "p.yml"), "--results",
                              str(top / "report"), "--output", str(output)])
    assert code in (0, 1), code
    leftovers = [n for n in os.listdir(str(top)) if n.endswith(".tmp")]
    assert not leftovers, leftovers
    if not output.exists():
        lines = err.getvalue().splitlines()
        assert code == 1 and len(lines) == 1 and lines[0].startswith("gpufleet gate: error: "), err.getvalue()
        return code, None, out.getvalue(), lines[0]
    report = json.loads(output.read_text())
    assert report["verdict"] in ("pass", "fail") and (code == 0) == (report["verdict"] == "pass")
    assert "written: %s" % output in out.getvalue()
    return code, report, out.getvalue(), err.getvalue()


def _check(report, name):
    return [c for p in report["phases"] for c in p["checks"] if c["name"] == name][0]


@SETTINGS
@given(name=st.sampled_from(sorted(RAW)), data=st.binary(max_size=3000))
def test_arbitrary_bytes_as_a_raw_output_give_a_report_that_fails_their_check(tmp_path_factory, name, data):
    TRIED["raw bytes"] += 1
    _code, report, _out, err = _evaluate(_folder(tmp_path_factory, {name: data}))
    assert report is not None, err  # a regular file of any bytes is read, never refused
    check = _check(report, RAW[name][0])
    assert check["verdict"] == "fail", (name, data, check["reason"])


@SETTINGS
@given(name=st.sampled_from(sorted(RAW)), at=st.floats(0, 1), junk=st.binary(min_size=1, max_size=40),
       invalid=st.sampled_from([b"\xff", b"\xfe\xfe", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\r", b""]))
def test_captures_with_bytes_spliced_in_are_judged(tmp_path_factory, name, at, junk, invalid):
    """Bytes that are not UTF-8 (as real kernel logs hold) become U+FFFD and parsing goes on."""
    TRIED["spliced captures"] += 1
    base = CAPTURES[name]
    cut = int(len(base) * at)
    _code, report, _out, err = _evaluate(_folder(tmp_path_factory, {name: base[:cut] + invalid + junk + base[cut:]}))
    assert report is not None, err
    assert _check(report, RAW[name][0])["reason"]


def _inputs(data):
    """inputs.json: one value of the real document changed, or the whole document replaced."""
    how = data.draw(st.sampled_from(["mutate", "mutate", "mutate", "whole", "bytes"]))
    if how == "whole":
        return data.draw(VALUES)
    if how == "bytes":
        return data.draw(st.binary(max_size=200))
    path = data.draw(st.sampled_from(key_paths(INPUTS)))
    return mutate(INPUTS, path, data.draw(st.sampled_from(["replace", "delete", "add"])), data.draw(VALUES))


@SETTINGS
@given(data=st.data())
def test_any_inputs_json_gives_a_report_or_one_line_naming_it(tmp_path_factory, data):
    TRIED["inputs.json"] += 1
    top = _folder(tmp_path_factory, inputs=_inputs(data))
    _code, report, _out, err = _evaluate(top)
    if report is None:
        assert str(top / "report" / "inputs.json") in err and "Repair it" in err, err


def test_report_how_many_inputs_were_tried():
    """Runs last in this file: the counts quoted in docs/reliability.md."""
    print("gate evaluate inputs tried: %s" % TRIED)
    assert sum(TRIED.values()) >= EXAMPLES  # the property tests above really ran
