"""Keep secrets out of what ansible-runner writes beside a run.

ansible-runner dumps the whole environment of the run (``os.environ`` plus its envvars)
into ``artifacts/<ident>/command`` before ansible-playbook starts, and hands it to every
status handler. A ledger password in ``GPUFLEET_LEDGER_PASSWORD``, a ``PGPASSWORD`` or a
signing-key passphrase would then sit in the run's artifacts. ``scrub_artifacts`` masks
every secret-looking variable there; ``gpufleet`` calls it from the runner's status handler
(the 'running' status comes right after the file is written) and again when the run ends.
"""
import glob
import json
import os
import re

__all__ = ["SECRET_NAME", "MASK", "scrub_env", "scrub_artifacts"]

MASK = "********"
# Variable names that carry credentials by convention (PostgreSQL, Ansible vault, ours).
SECRET_NAME = re.compile(r"PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|CREDENTIAL|PRIVATE_KEY|^PGPASS$", re.I)
# A password inside a URL of any variable: scheme://user:PASSWORD@host (a ledger or proxy URL).
URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/:@\s]*:)(?P<password>[^@\s/]+)(?=@)")


def scrub_env(env):
    """A copy of ``env`` with every secret-looking value masked; the count masked."""
    clean, masked = {}, 0
    for key, value in (env or {}).items():
        if SECRET_NAME.search(key) and value:
            clean[key] = MASK
            masked += 1
            continue
        if isinstance(value, str) and URL_PASSWORD.search(value):
            value = URL_PASSWORD.sub(lambda m: m.group("head") + MASK, value)
            masked += 1
        clean[key] = value
    return clean, masked


def scrub_artifacts(private_data_dir):
    """Mask secrets in every ``artifacts/*/command`` file of a run; returns files rewritten."""
    rewritten = []
    for path in glob.glob(os.path.join(private_data_dir, "artifacts", "*", "command")):
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            continue  # not written yet, or not ansible-runner's JSON: nothing of ours to mask
        clean, masked = scrub_env(data.get("env"))
        if masked:
            data["env"] = clean
            tmp = path + ".tmp"
            with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as handle:
                json.dump(data, handle, ensure_ascii=False)
            os.replace(tmp, path)
            rewritten.append(path)
    return rewritten
