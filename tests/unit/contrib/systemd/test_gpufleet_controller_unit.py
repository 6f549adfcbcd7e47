"""contrib/systemd: the hardened controller unit and its sysusers.d user."""
import os
import subprocess

from tests.helpers import need_tool

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
UNIT = os.path.join(ROOT, "contrib", "systemd", "gpufleet-controller.service")
SYSUSERS = os.path.join(ROOT, "contrib", "systemd", "gpufleet.sysusers.conf")


def unit():
    """{section: {key: [values]}} (systemd keys repeat; comments dropped)."""
    out, section = {}, None
    with open(UNIT, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("["):
                section = out.setdefault(line.strip("[]"), {})
                continue
            key, _eq, value = line.partition("=")
            section.setdefault(key, []).append(value)
    return out


def test_the_service_is_hardened_and_notifies():
    service = unit()["Service"]
    want = {"Type": ["notify"], "ProtectSystem": ["strict"], "ProtectHome": ["yes"], "NoNewPrivileges": ["yes"],
            "CapabilityBoundingSet": [""], "PrivateTmp": ["yes"], "StateDirectory": ["gpufleet"],
            "User": ["gpufleet"], "Group": ["gpufleet"]}
    for key, value in want.items():
        assert service.get(key) == value, key
    assert service["WatchdogSec"] and service["ReadWritePaths"] == ["/var/spool/gpufleet-controller"]
    exec_start, = service["ExecStart"]
    assert exec_start.endswith("gpufleet controller run --config /etc/gpufleet/controller.yml")


def test_the_user_comes_from_sysusers():
    lines = [line.split() for line in open(SYSUSERS, encoding="utf-8") if line.strip() and not line.startswith("#")]
    assert lines and lines[0][:3] == ["u", "gpufleet", "-"]
    assert lines[0][-2:] == ["/var/lib/gpufleet", "/usr/sbin/nologin"]


def test_systemd_accepts_the_unit(tmp_path):
    need_tool("systemd-analyze")     # Debian's systemd package; a skip only outside CI
    # the binary path is the one thing this host cannot have: point ExecStart at /bin/true
    text = open(UNIT, encoding="utf-8").read().replace("/opt/gpufleet/bin/gpufleet", "/bin/true")
    copy = tmp_path / "gpufleet-controller.service"
    copy.write_text(text)
    done = subprocess.run(["systemd-analyze", "verify", str(copy)], capture_output=True, text=True, timeout=60)
    problems = [line for line in (done.stdout + done.stderr).splitlines() if "gpufleet-controller.service" in line]
    assert not problems, problems
