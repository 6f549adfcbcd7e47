"""`gpufleet controller --log-format json` / ``log_format:``: every line one JSON object, no secret in any."""
import json

import pytest

from gpufleet.main import main
from tests.unit.gpufleet.commands.test_controller import _no_host_config, write_config  # noqa: F401 (a fixture)
from tests.unit.gpufleet.inventory_once import shipped_inventory_once  # noqa: F401 (an autouse fixture)

# A scheduler that fails, echoing what a careless wrapper might: every secret it was given.
LEAKY = """import os, sys
password = open(SITE).read().splitlines()[0].split(": ")[1]
sys.stderr.write("denied: bmc " + password + " token " + os.environ["GPUFLEET_API_TOKEN"]
                 + " via postgresql://ctl:url-pw@db/gpufleet")
sys.exit(3)
"""
BMC_PASSWORD, TOKEN = "Bmc-S3cret-pw", "tok-0123456789"


def config_with(tmp_path, script=None, **extra):
    """test_controller's config file (the fake Slurm), its fake Slurm replaced by ``script``."""
    path = write_config(tmp_path, **extra)
    if script is not None:
        (tmp_path / "fake_slurm.py").write_text(script)
    return path


def test_the_file_s_json_format_makes_every_line_one_object_with_the_plan_s_fields(tmp_path, capsys):
    path = config_with(tmp_path, log_format="json")
    assert main(["controller", "once", "--config", path, "--dry-run"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    planned = [r for r in records if r.get("event") == "planned"]
    assert records[0]["event"] == "plan" and records[0]["actions"] == len(planned) > 0, records
    notes = [r for r in records if r.get("event") == "plan_notes" and r["pool"] == "lab"]
    assert notes[0]["notes"]["supply"]["cold"] > 0, notes
    planned = planned[0]
    assert planned["kind"] in ("bringup", "reserve") and planned["pool"] == "lab" and planned["reason"]
    assert planned["nodes"] and all(set(r) >= {"ts", "level", "message"} for r in records)


def test_the_flag_overrides_the_file_and_says_so(tmp_path, capsys):
    path = config_with(tmp_path, log_format="json")
    assert main(["controller", "once", "--config", path, "--dry-run", "--log-format", "text"]) == 0
    out = capsys.readouterr().out
    assert "config: --log-format 'text' overrides log_format: 'json' of %s" % path in out
    assert "plan: " in out and not [line for line in out.splitlines() if line.startswith("{")], out


def test_an_unknown_format_in_the_file_is_refused_naming_the_key(tmp_path, capsys):
    path = config_with(tmp_path, log_format="yaml")
    assert main(["controller", "once", "--config", path, "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert "log_format: Input should be 'text' or 'json'" in err and "Traceback" not in err, err


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_no_bmc_password_token_or_url_password_reaches_a_line(tmp_path, capsys, monkeypatch, fmt):
    site = tmp_path / "site-vars.yml"
    site.write_text("vault_gpufleet_bmc_password: %s\ngpufleet_ledger: ledger.sqlite\n" % BMC_PASSWORD)
    monkeypatch.setenv("GPUFLEET_API_TOKEN", TOKEN)
    path = config_with(tmp_path, script=LEAKY.replace("SITE", repr(str(site))), vars="[%s]" % site, log_format=fmt)
    assert main(["controller", "once", "--config", path, "--dry-run"]) == 1
    said = capsys.readouterr()
    everything = said.out + said.err
    assert "denied: bmc" in everything and "failed (exit 3)" in everything, everything   # the line was said
    for secret in (BMC_PASSWORD, TOKEN, "url-pw"):
        assert secret not in everything, everything
    if fmt == "json":
        line, = [json.loads(line) for line in said.out.splitlines() if "denied" in line]
        assert line["level"] == "error" and line["event"] == "pass_skipped"
