"""Per-lab secrets (lab/twin/secrets.py) and where the lab refers to them instead of copying them."""
import os
import stat

import pytest
import yaml

from lab.bmc import config as bmc_config
from lab.twin import config as lab_config
from lab.twin import lab as lab_mod
from lab.twin import secrets as lab_secrets
from lab.twin.errors import LabError


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_each_lab_gets_its_own_random_bmc_password_and_munge_key(tmp_path):
    one = lab_config.load(None, state_dir=str(tmp_path / "one"))
    two = lab_config.load(None, state_dir=str(tmp_path / "two"))
    assert one.bmc_password != two.bmc_password and len(one.bmc_password) >= 24
    assert one.bmc_password == lab_config.load(None, state_dir=str(tmp_path / "one")).bmc_password  # stable
    keys = [lab_secrets.ensure_secret(c.state_dir, lab_secrets.MUNGE_KEY) for c in (one, two)]
    assert open(keys[0]).read() != open(keys[1]).read() and len(open(keys[0]).read()) == 128
    for path in keys + [one.bmc_password_file]:
        assert _mode(path) == 0o600
    assert _mode(os.path.dirname(keys[0])) == 0o700


def test_a_widened_secret_file_is_narrowed_again(tmp_path):
    path = lab_secrets.ensure_secret(str(tmp_path), lab_secrets.BMC_PASSWORD)
    os.chmod(path, 0o644)
    lab_secrets.ensure_secret(str(tmp_path), lab_secrets.BMC_PASSWORD)
    assert _mode(path) == 0o600


def test_an_empty_secret_is_refused_naming_the_file(tmp_path):
    lab_secrets.store_secret(str(tmp_path), lab_secrets.BMC_PASSWORD, "")
    with pytest.raises(LabError) as err:
        lab_secrets.read_secret(str(tmp_path), lab_secrets.BMC_PASSWORD)
    assert lab_secrets.secret_path(str(tmp_path), lab_secrets.BMC_PASSWORD) in err.value.msg


def test_written_configs_and_vars_name_the_file_not_the_password(tmp_path):
    cfg = lab_config.load(None, state_dir=str(tmp_path), bmc={"address_pattern": "127.0.20.{rack}", "port": 8443,
                                                             "username": "admin", "password": "explicit-pw-123"})
    assert cfg.bmc_password == "explicit-pw-123"  # an explicit password moves into the secret file
    texts = [yaml.safe_dump(cfg.public_raw()), yaml.safe_dump(lab_mod.bmc_config(cfg)),
             yaml.safe_dump(lab_mod.playbook_vars(cfg, lab_secrets.ensure_secret(cfg.state_dir, "munge.key")))]
    for text in texts:
        assert "explicit-pw-123" not in text
    assert cfg.bmc_password_file in texts[2]


def test_the_bmc_emulator_reads_its_password_file(tmp_path):
    secret = lab_secrets.store_secret(str(tmp_path), lab_secrets.BMC_PASSWORD, "from-file-456")
    path = tmp_path / "bmc.yml"
    path.write_text(yaml.safe_dump({"password_file": secret, "racks": [{"name": "r1", "address": "127.0.20.1",
                                                                          "port": 8443, "node_count": 1}]}))
    assert bmc_config.load(str(path))["password"] == "from-file-456"
    os.remove(secret)
    with pytest.raises(bmc_config.ConfigError) as err:
        bmc_config.load(str(path))
    assert "password_file" in str(err.value) and secret in str(err.value)
