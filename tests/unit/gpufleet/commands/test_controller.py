"""`gpufleet controller` with a config file: flags over the file, errors without a traceback."""
import os
import sys
from types import SimpleNamespace

import pytest

from gpufleet import state_dir
from gpufleet.commands import controller
from gpufleet.controller import service_config
from gpufleet.main import main

HERE = os.path.dirname(__file__)
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
FIXTURES = os.path.join(ROOT, "tests", "unit", "gpufleet", "controller", "fixtures")
FAKE = """import sys
name = {"squeue": "squeue-22.05-pending.json", "sinfo": "sinfo-22.05-cloud-unregistered.json"}[sys.argv[1]]
sys.stdout.write(open(%r + "/" + name).read())
"""


@pytest.fixture(autouse=True)
def _no_host_config(monkeypatch, tmp_path):
    # a host's own /etc/gpufleet/controller.yml must not leak into the tests
    monkeypatch.setattr(service_config, "DEFAULT_PATH", str(tmp_path / "absent.yml"))
    monkeypatch.delenv("GPUFLEET_CONTROLLER_SPOOL", raising=False)
    yield
    state_dir.configure(None)


def write_config(tmp_path, **extra):
    fake = tmp_path / "fake_slurm.py"
    fake.write_text(FAKE % FIXTURES)
    lines = ["policy: %s" % os.path.join(ROOT, "lab", "config", "capacity.yml"),
             "inventory: %s" % os.path.join(ROOT, "inventories", "lab.rack.yml"),
             "ledger: ledger.sqlite", "slurm_prefix: %s %s" % (sys.executable, fake),
             "state_dir: state"] + ["%s: %s" % kv for kv in extra.items()]
    path = tmp_path / "controller.yml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_once_dry_run_takes_everything_from_the_config_file(tmp_path, capsys):
    path = write_config(tmp_path)
    assert main(["controller", "once", "--config", path, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "bringup" in out and "lab-r1n1" in out, out
    assert state_dir.current() == (str(tmp_path / "state"), "configured")


def test_a_named_config_that_is_missing_is_one_error(tmp_path, capsys):
    assert main(["controller", "once", "--config", str(tmp_path / "nope.yml"), "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert "controller config %s refused" % (tmp_path / "nope.yml") in err and "Traceback" not in err


def test_a_bad_key_refuses_the_run_naming_the_key(tmp_path, capsys):
    path = write_config(tmp_path, intervall="10s")
    assert main(["controller", "run", "--config", path]) == 1
    err = capsys.readouterr().err
    assert "intervall: unknown key; fix: remove or rename it" in err


def test_no_policy_anywhere_is_an_error(tmp_path, capsys):
    assert main(["controller", "status", "--ledger", str(tmp_path / "l.sqlite")]) == 1
    assert "No capacity policy: pass --policy FILE or set policy:" in capsys.readouterr().err


def args_for(path, **flags):
    base = dict(config=path, lab=False, dry_run=False, **{name: None for name in service_config.SETTINGS})
    base.update(flags)
    return SimpleNamespace(**base)


def test_flags_override_the_file_and_say_so(tmp_path, capsys):
    path = write_config(tmp_path, interval="30s", lease_ttl="2m")
    args = controller.settle(args_for(path, interval=5.0, state_dir=str(tmp_path / "elsewhere")), "run")
    assert args.interval == 5.0 and args.lease_ttl == 120 and args.keep_runs == 500
    assert state_dir.current()[0] == str(tmp_path / "elsewhere")
    assert "config: --interval 5.0 overrides interval: 30.0 of %s" % path in capsys.readouterr().out


def test_a_lease_shorter_than_the_interval_is_refused(tmp_path):
    from gpufleet.controller.errors import ControllerError
    with pytest.raises(ControllerError) as info:
        controller.settle(args_for(write_config(tmp_path, interval="2m"), lease_ttl=60.0), "run")
    assert "lease TTL (60s, --lease-ttl) must be above the interval (120s, " in str(info.value)


def test_a_watchdog_not_above_the_interval_is_refused(tmp_path, monkeypatch):
    from gpufleet.controller.errors import ControllerError
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "notify"))
    monkeypatch.setenv("WATCHDOG_USEC", "5000000")
    args = controller.settle(args_for(write_config(tmp_path)), "run")
    with pytest.raises(ControllerError) as info:
        controller._notifier(args)
    assert "WatchdogSec= (5s) is not above the interval (10s, default)" in str(info.value)


def test_pool_warnings_count_inventory_members(tmp_path):
    from gpufleet.commands.controller import pool_warnings
    from gpufleet.controller.inventory import Host
    from gpufleet.controller.planning import Planning
    from gpufleet.capacity.policy import parse_policy
    policy = parse_policy("pools:\n  p:\n    sku: x\n    members: {groups: [gpu]}\n    floors: {hot: 3}\n")
    planning = Planning(policy=policy)
    hosts = [Host(name="n%d" % i, groups=("gpu",)) for i in range(2)] + [Host(name="other", groups=("cpu",))]
    lines = pool_warnings(planning, hosts)
    assert len(lines) == 1 and "exceed the pool's 2 node(s)" in lines[0]
    assert pool_warnings(planning, hosts + [Host(name="n9", groups=("gpu",))]) == []
