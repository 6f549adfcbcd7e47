"""gpufleet.runner_artifacts: secrets in ansible-runner's command artifact are masked."""
import json
import os
import stat

from gpufleet.runner_artifacts import MASK, scrub_artifacts, scrub_env


def _write(tmp_path, env, ident="abc"):
    folder = tmp_path / "artifacts" / ident
    folder.mkdir(parents=True)
    path = folder / "command"
    path.write_text(json.dumps({"command": ["ansible-playbook", "x.yml"], "cwd": "/", "env": env}))
    return path


def test_secret_looking_variables_are_masked_and_the_rest_kept(tmp_path):
    path = _write(tmp_path, {"GPUFLEET_LEDGER_PASSWORD": "s3cr3t-value", "PGPASSWORD": "pg-value",
                             "GPUFLEET_SIGNING_KEY_PASSPHRASE": "phrase", "VAULT_TOKEN": "tok",
                             "PATH": "/usr/bin", "ANSIBLE_COLLECTIONS_PATH": "/c", "PGPASSFILE": "/root/.pgpass"})
    assert scrub_artifacts(str(tmp_path)) == [str(path)]
    text = path.read_text()
    for secret in ("s3cr3t-value", "pg-value", "phrase", "tok"):
        assert secret not in text
    env = json.loads(text)["env"]
    assert env["PGPASSWORD"] == MASK and env["PATH"] == "/usr/bin" and env["ANSIBLE_COLLECTIONS_PATH"] == "/c"
    assert env["PGPASSFILE"] == "/root/.pgpass"  # a path to a secret is not the secret
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_a_clean_environment_is_left_untouched(tmp_path):
    path = _write(tmp_path, {"PATH": "/usr/bin"})
    before = path.read_text()
    assert scrub_artifacts(str(tmp_path)) == []
    assert path.read_text() == before


def test_a_missing_or_unfinished_artifact_is_skipped(tmp_path):
    folder = tmp_path / "artifacts" / "x"
    folder.mkdir(parents=True)
    (folder / "command").write_text('{"env": {"PGPASSWORD": ')  # mid-write
    assert scrub_artifacts(str(tmp_path)) == []
    assert scrub_artifacts(str(tmp_path / "nothing-here")) == []


def test_empty_secret_values_are_not_counted():
    clean, masked = scrub_env({"PGPASSWORD": "", "X": "1"})
    assert masked == 0 and clean == {"PGPASSWORD": "", "X": "1"}


def test_a_password_inside_a_url_is_masked_wherever_the_url_sits():
    clean, masked = scrub_env({"GPUFLEET_TEST_PG_URL": "postgresql://gpufleet:pa55word@127.0.0.1:5432/db",
                               "HTTPS_PROXY": "http://proxy.example:3128", "X": "a:b@c"})
    assert masked == 1
    assert clean["GPUFLEET_TEST_PG_URL"] == "postgresql://gpufleet:" + MASK + "@127.0.0.1:5432/db"
    assert clean["HTTPS_PROXY"] == "http://proxy.example:3128" and clean["X"] == "a:b@c"
