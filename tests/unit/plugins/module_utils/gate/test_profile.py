"""Profile loading and validation: shipped profiles load, invalid ones name the key and the fix."""
import re

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ProfileError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.profile import load_profile, profile_from_dict
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.units import parse_size
from tests.unit.plugins.module_utils.gate.gate_support import BASE, PROFILES, SKU_PROFILES, load, profile, shipped_path


@pytest.mark.parametrize("name", PROFILES)
def test_shipped_profiles_load_and_every_limit_names_its_source(name):
    prof = load(name)
    assert prof.name == name and prof.checks
    with open(shipped_path(name)) as handle:
        text = handle.read()
    blocks = re.split(r"\n  (?=[a-z_0-9]+:\n)", text.split("\nchecks:\n", 1)[1])
    for block in blocks:
        check = block.strip().split(":", 1)[0]
        assert "#" in block, "%s: check %s has no source comment" % (name, check)


@pytest.mark.parametrize("name", SKU_PROFILES)
def test_sku_profiles_cover_the_required_checks(name):
    required = {"gpu_count", "gpu_model", "dcgm_diag", "ecc_uncorrectable", "row_remap_pending", "row_remap_failures",
                "xid", "gpu_burn", "nvlink_links", "nvbandwidth_d2d", "nvbandwidth_h2d", "nvbandwidth_d2h",
                "nccl_single_node", "nccl_multi_node", "ib_write_bw", "fio_seq_read", "fio_seq_write",
                "fio_rand_read", "fio_rand_write", "soak"}
    prof = load(name)
    assert required <= set(check for check, _t in prof.checks)
    assert prof.threshold("clock_events").limit == 0 and prof.threshold("soak_errors").limit == 0
    # HGX H100/H200/B200 report a fabric state; A100 does not (real capture: State N/A)
    assert prof.has("nvswitch_fabric") == (name != "a100-sxm-8x")
    assert all(prof.threshold(c).retries > 0 for c in ("nvbandwidth_d2d", "nccl_single_node", "ib_write_bw"))
    assert prof.threshold("nccl_single_node").param("message_size") >= parse_size("8G")


def test_lab_profile_has_firmware_pins_reference_job_and_soak():
    prof = load("lab")
    assert prof.threshold("firmware_pins").limit == (("BIOS", "2.1.0"), ("BMC", "1.4.2"))
    assert prof.threshold("reference_job").param("metric") == "bandwidth"
    assert prof.phase_checks("soak") == ("soak", "soak_errors")


@pytest.mark.parametrize("overrides, key, fragment", [
    ({"gpu_counts": {"equals": 8, "unit": "count"}}, "checks.gpu_counts", "unknown check"),
    ({"gpu_count": {"equals": 8}}, "checks.gpu_count.unit", "missing unit"),
    ({"nvbandwidth_d2d": {"min": 335, "unit": "IOPS"}}, "checks.nvbandwidth_d2d.unit", 'unit "IOPS" does not fit'),
    ({"gpu_count": {"equals": 8, "unit": "gpus"}}, "checks.gpu_count.unit", "Use one of: count"),
    ({"nvbandwidth_d2d": {"unit": "GB/s"}}, "checks.nvbandwidth_d2d.min", "missing limit"),
    ({"nvbandwidth_d2d": {"min": 0, "unit": "GB/s"}}, "checks.nvbandwidth_d2d.min", "can never fail"),
    ({"nvbandwidth_d2d": {"min": 9000, "unit": "GB/s"}}, "checks.nvbandwidth_d2d.min", "above what any supported"),
    ({"ib_write_bw": {"min": 400, "unit": "GB/s"}}, "checks.ib_write_bw.min", "above what any supported"),
    ({"ecc_uncorrectable": {"max": -1, "unit": "count"}}, "checks.ecc_uncorrectable.max", "-1 is impossible"),
    ({"gpu_count": {"equals": 0, "unit": "count"}}, "checks.gpu_count.equals", "0 is impossible"),
    ({"gpu_count": {"equals": "eight", "unit": "count"}}, "checks.gpu_count.equals", "is not a number"),
    ({"gpu_count": {"equals": True, "unit": "count"}}, "checks.gpu_count.equals", "is not a number"),
    ({"xid": {"deny": [], "unit": "xid"}}, "checks.xid.deny", "non-empty list of XID numbers"),
    ({"gpu_model": {"one_of": "NVIDIA H100", "unit": "name"}}, "checks.gpu_model.one_of", "non-empty list of names"),
    ({"firmware_pins": {"pins": {"BIOS": 2.1}, "unit": "version"}}, "checks.firmware_pins.pins.BIOS", "Quote it"),
    ({"firmware_pins": {"pins": {}, "unit": "version"}}, "checks.firmware_pins.pins", "mapping of component"),
    ({"gpu_count": {"equals": 8, "unit": "count", "retries": 1}}, "checks.gpu_count.retries", "only bandwidth"),
    ({"nvbandwidth_d2d": {"min": 335, "unit": "GB/s", "retries": 9}}, "checks.nvbandwidth_d2d.retries", "between 0"),
    ({"nvbandwidth_d2d": {"min": 335, "unit": "GB/s", "floor": 1}}, "checks.nvbandwidth_d2d.floor", "unknown key"),
    ({"dcgm_diag": {"level": 5, "unit": "tests"}}, "checks.dcgm_diag.level", "from 1 to 4"),
    ({"dcgm_diag": {"level": 3, "required": "memory", "unit": "tests"}}, "checks.dcgm_diag.required", "list of names"),
    ({"nccl_single_node": {"min": 460, "unit": "GB/s", "message_size": "huge"}}, "checks.nccl_single_node.message_size",
     "8G"),
    ({"nccl_single_node": {"min": 460, "unit": "GB/s", "message_size": 0}}, "checks.nccl_single_node.message_size",
     "above 0"),
    ({"soak": {"min": 100, "metric": "x"}}, "checks.soak.unit", "missing unit"),
    ({"soak": {"min": 100, "unit": "x", "command": ""}}, "checks.soak.command", "non-empty string"),
    ({"gpu_count": [8]}, "checks.gpu_count", "not a mapping"),
    ({"clock_events": {"max": 0, "unit": "ms"}}, "checks.clock_events.unit", "Use one of: us"),
    ({"clock_events": {"max": -5, "unit": "us"}}, "checks.clock_events.max", "-5 is impossible"),
    ({"clock_events": {"max": 0, "unit": "us", "min_sm_clock_mhz": 0}}, "checks.clock_events.min_sm_clock_mhz",
     "from 1 to 5000"),
    ({"clock_events": {"max": 0, "unit": "us", "min_sm_clock_mhz": "1300 MHz"}},
     "checks.clock_events.min_sm_clock_mhz", "whole number"),
    ({"soak_errors": {"max": 0, "unit": "count", "max_correctable": -1}}, "checks.soak_errors.max_correctable",
     "from 0 to 1000000"),
    ({"soak_errors": {"max": 0, "unit": "count", "max_new_xids": True}}, "checks.soak_errors.max_new_xids",
     "whole number"),
    ({"soak_errors": {"unit": "count"}}, "checks.soak_errors.max", "missing limit"),
    ({"nvswitch_fabric": {"min": 8, "unit": "gpus", "fabric_manager": "yes"}}, "checks.nvswitch_fabric.fabric_manager",
     "true or false"),
    ({"nvswitch_fabric": {"min": 0, "unit": "gpus"}}, "checks.nvswitch_fabric.min", "can never fail"),
    ({"nvswitch_fabric": {"min": 80, "unit": "gpus"}}, "checks.nvswitch_fabric.min", "above what any supported"),
])
def test_invalid_profiles_name_the_key_and_the_fix(overrides, key, fragment):
    with pytest.raises(ProfileError) as err:
        profile(**overrides)
    assert err.value.key == key
    assert err.value.profile == "t"
    assert fragment in str(err.value)
    assert str(err.value).startswith('Threshold profile "t" is invalid at "%s"' % key)


@pytest.mark.parametrize("data, key", [
    ([], "<top>"),
    ({"checks": {}}, "checks"),
    ({"profile": "other", "checks": BASE["checks"]}, "profile"),
    ({"profile": "t", "checks": BASE["checks"], "thresholds": {}}, "thresholds"),
])
def test_invalid_profile_shapes(data, key):
    with pytest.raises(ProfileError) as err:
        profile_from_dict(data, "t")
    assert err.value.key == key


def test_load_profile_reports_yaml_and_file_errors(tmp_path):
    bad = tmp_path / "broken.yml"
    bad.write_text("checks: [\n")
    with pytest.raises(ProfileError) as err:
        load_profile(str(bad))
    assert "not valid YAML" in str(err.value)
    with pytest.raises(ProfileError) as err:
        load_profile(str(tmp_path / "absent.yml"))
    assert "cannot be read" in str(err.value)


@pytest.mark.parametrize("value, size", [(8589934592, 8589934592), ("8G", 8589934592), ("128M", 134217728),
                                         ("4KiB", 4096), ("16g", 17179869184)])
def test_parse_size(value, size):
    assert parse_size(value) == size


def _with_health(section):
    import copy
    return profile_from_dict(dict(copy.deepcopy(BASE), health=section), "t")


def test_health_section_keeps_the_limits_and_runs_dcgm_at_level_1():
    built = _with_health({"checks": ["xid", "dcgm_diag"], "dcgm_required": ["software"]})
    health = built.for_health()
    assert [name for name, _t in health.checks] == ["xid", "dcgm_diag"]
    assert health.threshold("xid") == built.threshold("xid")
    dcgm = health.threshold("dcgm_diag")
    assert (dcgm.param("level"), dcgm.param("required")) == (1, ("software",))
    assert built.threshold("dcgm_diag").param("level") == 3          # the full gate is unchanged


@pytest.mark.parametrize("section,key,fragment", [
    ("xid", "health", "not a mapping"),
    ({"checks": []}, "health.checks", "missing, empty"),
    ({"checks": ["gpu_burn"]}, "health.checks.gpu_burn", "not a fast check"),
    ({"checks": ["row_remap_failures"]}, "health.checks.row_remap_failures", "no such check"),
    ({"checks": ["xid"], "level": 1}, "health.level", "unknown key"),
    ({"checks": ["dcgm_diag"], "dcgm_required": "software"}, "health.dcgm_required", "not valid"),
])
def test_health_section_errors_name_the_key(section, key, fragment):
    with pytest.raises(ProfileError) as err:
        _with_health(section)
    assert key in str(err.value) and fragment in str(err.value)


@pytest.mark.parametrize("name", PROFILES)
def test_every_shipped_profile_has_a_health_section(name):
    assert load_profile(shipped_path(name)).for_health().checks


@pytest.mark.parametrize("text, key, line", [
    # the second floor would have won silently: a profile loosened from 400 to 1 GB/s
    ("profile: dup\nchecks:\n  nccl_single_node:\n    min: 400\n    unit: GB/s\n    min: 1\n",
     "checks.nccl_single_node.min", 6),
    ("profile: dup\nchecks: {xid: {deny: [79], unit: xid, deny: [1]}}\n", "checks.xid.deny", 2),
    ("profile: dup\nchecks:\n  xid: {deny: [79], unit: xid}\nchecks:\n  xid: {deny: [1], unit: xid}\n", "checks", 4),
])
def test_duplicate_keys_are_refused_naming_the_key_and_line(tmp_path, text, key, line):
    path = tmp_path / "dup.yml"
    path.write_text(text)
    with pytest.raises(ProfileError) as err:
        load_profile(str(path))
    assert err.value.key == "%s (%s line %d)" % (key, path, line)
    assert "appears twice" in str(err.value) and "Keep one of the two keys" in str(err.value)


def test_a_device_file_is_refused_as_a_profile():
    with pytest.raises(ProfileError) as err:
        load_profile("/dev/zero")
    assert "not a regular file" in str(err.value)
