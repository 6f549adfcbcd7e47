"""Lab BMC config: read strictly (a key twice, non-UTF-8 text, a list at the top are ConfigErrors)."""
import pytest

from lab.bmc import config as bmc_config

CONFIG = "state_dir: {state}\npassword: lab\nracks:\n  - {{name: r1, address: 127.0.10.1, port: 8443, node_count: 2}}\n"


def test_a_config_loads(tmp_path):
    path = tmp_path / "bmc.yml"
    path.write_text(CONFIG.format(state=tmp_path / "state"))
    cfg = bmc_config.load(str(path))
    assert cfg["racks"][0]["name"] == "r1" and cfg["events_file"] == str(tmp_path / "state" / "events.jsonl")


def test_a_key_written_twice_is_refused_naming_both_lines(tmp_path):
    """PyYAML alone keeps the last of two keys: the second password would win unseen."""
    path = tmp_path / "bmc.yml"
    path.write_text(CONFIG.format(state=tmp_path / "state") + "password: other\n")
    with pytest.raises(bmc_config.ConfigError) as err:
        bmc_config.load(str(path))
    assert str(err.value) == ("%s line 5: key 'password' appears twice (first on line 2); fix: keep one of the two "
                              "keys" % path)


@pytest.mark.parametrize("raw, words", [
    (b"- r1\n", "the top level is a list, not a mapping"),
    (b"password: \xff\n", "not UTF-8 text"),
    (b"racks: [\n", "not valid YAML"),
])
def test_unusable_configs_are_config_errors_naming_the_file(tmp_path, raw, words):
    path = tmp_path / "bmc.yml"
    path.write_bytes(raw)
    with pytest.raises(bmc_config.ConfigError) as err:
        bmc_config.load(str(path))
    assert str(path) in str(err.value) and words in str(err.value) and "fix:" in str(err.value)
