"""The controller's config file: strict reading, precise errors, and flags over the file."""
import pytest

from gpufleet.controller import service_config
from gpufleet.controller.service_config import ConfigError, load_config, merge, parse_config, read_for

FULL = """
policy: capacity.yml
inventory: /etc/gpufleet/rack.yml
vars: [site-vars.yml]
ledger: postgresql://gpufleet@db.example/gpufleet
slurm_prefix: ssh slurm-ctl
spool: /var/spool/gpufleet-controller
state_dir: /var/lib/gpufleet
id: ctl-a
concurrency: 8
interval: 30s
lease_ttl: 2m
wait: true
metrics: {address: 0.0.0.0, port: 9464}
retention: {keep_runs: 100, keep_for: 3d}
"""


def test_every_key_is_read():
    config = parse_config(FULL)
    assert config.interval == 30 and config.lease_ttl == 120 and config.wait is True
    assert config.metrics.port == 9464 and config.retention.keep_for == 3 * 86400


def problems(text):
    with pytest.raises(ConfigError) as info:
        parse_config(text, "controller.yml")
    return info.value.problems


def test_an_unknown_key_names_its_path_and_the_keys_allowed():
    got, = problems("metrics: {adress: 0.0.0.0}\n")
    assert got.startswith("metrics.adress: unknown key; fix: remove or rename it (allowed here: address, port)")


def test_a_wrong_type_names_the_key_and_the_fix():
    got = problems("interval: 10\nmetrics: {port: '9464'}\nwait: 'yes'\nretention: {keep_runs: -1}\n")
    text = "\n".join(got)
    assert "interval: a duration must be a string with a unit, got 10; fix:" in text
    assert "metrics.port: Input should be a valid integer (got '9464'); fix: write a whole number" in text
    assert "wait: Input should be a valid boolean" in text and "retention.keep_runs:" in text
    assert "docs/capacity.md" not in text


def test_a_zero_interval_is_refused():
    got, = problems("interval: 0s\n")
    assert "interval must be above 0s" in got


def test_duplicate_keys_are_refused_by_the_strict_reader():
    got, = problems("interval: 10s\ninterval: 20s\n")
    assert got.startswith("(file) line 2: key 'interval' appears twice") and "fix: keep one" in got


def test_a_file_that_is_not_a_mapping_is_refused():
    got, = problems("- policy.yml\n")
    assert got.startswith("(top level): expected a mapping")


def test_an_empty_file_is_all_defaults():
    assert parse_config("") == service_config.ControllerConfig()


def test_a_named_missing_file_is_an_error_and_the_missing_default_is_fine(tmp_path):
    with pytest.raises(ConfigError) as info:
        read_for(str(tmp_path / "nope.yml"))
    assert "cannot read it" in str(info.value)
    assert read_for(None, default=str(tmp_path / "nope.yml")) == (None, None)


def test_the_default_file_is_not_read_with_lab_unless_named(tmp_path):
    path = tmp_path / "controller.yml"
    path.write_text("interval: 30s\n")
    assert read_for(None, lab=True, default=str(path)) == (None, None)
    assert read_for(None, default=str(path))[0].interval == 30
    assert read_for(str(path), lab=True)[0].interval == 30


def test_flags_win_and_each_override_is_said(tmp_path):
    path = tmp_path / "controller.yml"
    path.write_text(FULL)
    config = load_config(str(path))
    values, origins, notes = merge({"interval": 5.0, "ledger": "postgresql://u:secret@other/db"}, config, str(path),
                                   environ={})
    assert values["interval"] == 5.0 and origins["interval"] == "--interval"
    assert values["lease_ttl"] == 120 and origins["lease_ttl"] == "%s (lease_ttl)" % path
    assert values["policy"] == str(tmp_path / "capacity.yml")       # relative to the file
    assert values["vars"] == [str(tmp_path / "site-vars.yml")]
    assert values["metrics_port"] == 9464 and values["keep_runs"] == 100
    assert notes == ["--ledger (a URL) overrides ledger: (a URL) of %s" % path,
                     "--interval 5.0 overrides interval: 30.0 of %s" % path]
    assert "secret" not in "".join(notes)


def test_a_flag_equal_to_the_file_says_nothing_and_defaults_fill_the_rest():
    values, origins, notes = merge({"interval": 30.0}, parse_config("interval: 30s\n"), "/etc/x.yml", environ={})
    assert notes == [] and values["lease_ttl"] == 60.0 and origins["lease_ttl"] == "default"
    assert values["keep_runs"] == 500 and values["keep_for"] == 7 * 86400


def test_a_null_in_the_file_switches_a_default_off():
    values, _o, _n = merge({}, parse_config("retention: {keep_runs: null}\nmetrics: {port: null}\n"), "/x.yml",
                           environ={})
    assert values["keep_runs"] is None and values["keep_for"] == 7 * 86400 and values["metrics_port"] is None


def test_the_spool_environment_variable_sits_between_flag_and_file():
    config = parse_config("spool: /var/spool/a\n")
    env = {"GPUFLEET_CONTROLLER_SPOOL": "/var/spool/b"}
    values, origins, notes = merge({}, config, "/etc/c.yml", environ=env)
    assert values["spool"] == "/var/spool/b" and origins["spool"] == "$GPUFLEET_CONTROLLER_SPOOL"
    assert notes and "overrides spool" in notes[0]
    assert merge({"spool": "/var/spool/c"}, config, "/etc/c.yml", environ=env)[0]["spool"] == "/var/spool/c"


def test_without_a_file_flags_and_defaults_only():
    values, origins, notes = merge({"policy": "p.yml"}, None, None, environ={})
    assert values["policy"] == "p.yml" and values["interval"] == 10.0 and notes == []
