"""The fleet page rendered by headless Chromium (Debian's ``chromium``): the DOM it builds holds
the seam chart, the pending jobs' answers and the job starts; the screenshot is kept in
build/test-artifacts/fleet-page.png."""
import os
import re
import shutil
import subprocess

import pytest

from gpufleet.main import main
from tests.unit.gpufleet.view.history import H, T0
from tests.unit.gpufleet.view.ledger_fill import write_inputs

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ARTIFACTS = os.path.join(ROOT, "build", "test-artifacts")
CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/bootstrap-host.sh installs it)")


def _chromium(profile, *args):
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--no-first-run", "--user-data-dir=%s" % profile] + list(args)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _page(tmp_path, monkeypatch, capsys):
    ledger, policy, squeue, sinfo, inventory = write_inputs(tmp_path)
    # The page's period ends "now": pin the clock at the end of the hand-made history.
    monkeypatch.setattr("gpufleet.commands.report.time.time", lambda: T0 + 4 * H)
    code = main(["report", "--ledger", ledger, "--out", str(tmp_path / "out"), "--fleet", "--policy", policy,
                 "--inventory", inventory, "--since", str(T0), "--squeue-json", squeue, "--sinfo-json", sinfo])
    assert code == 0, capsys.readouterr().err
    return str(tmp_path / "out" / "fleet.html")


def test_chromium_renders_the_fleet_page(tmp_path, monkeypatch, capsys):
    page = _page(tmp_path, monkeypatch, capsys)
    dom = _chromium(tmp_path / "profile", "--dump-dom", "file://" + page)
    segments = re.findall(r'<rect class="seam-seg" data-category="([a-z_]+)"', dom)
    assert {"busy", "idle", "hot", "warm", "not_enrolled", "break_fix"} <= set(segments)
    assert "Why each pending job waits" in dom
    assert re.search(r"<td>102</td><td>L1</td><td>capacity supply</td>", dom)
    assert "the job needs 5 nodes of pool h100 (h100-sxm-8x) and the pool owns 3" in dom
    assert re.search(r"<td>101</td><td>h100</td><td>n1</td>", dom)
    os.makedirs(ARTIFACTS, exist_ok=True)
    shot = os.path.join(ARTIFACTS, "fleet-page.png")
    if os.path.exists(shot):
        os.remove(shot)
    _chromium(tmp_path / "profile", "--screenshot=%s" % shot, "--window-size=1280,2000", "file://" + page)
    with open(shot, "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"
