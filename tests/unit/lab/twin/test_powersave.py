"""The lab's power-saving relay (a simulation of the slurmctld host): requests the lab
slurmctld's programs leave become real `gpufleet slurm` calls, and the program script
itself writes exactly what the relay reads."""
import os
import subprocess
import types

from lab.twin import powersave
from tests.helpers import ROOT

PROGRAMS = os.path.join(ROOT, "lab", "slurm", "powersave")


def _ok(argv, **_kw):
    return types.SimpleNamespace(returncode=0, stdout="queued", stderr="")


def test_requests_become_gpufleet_slurm_calls_in_order_and_are_removed(tmp_path):
    (tmp_path / "2-suspend.request").write_text("suspend lab-r1n[1-2]\n")
    (tmp_path / "1-resume.request").write_text("resume lab-r2n3\n")
    (tmp_path / ".request.tmp123").write_text("resume half-written")
    calls = []
    got = powersave.relay_once(str(tmp_path), "/spool", run=lambda argv, **kw: calls.append(argv) or _ok(argv))
    assert got == [("resume", "lab-r2n3", True), ("suspend", "lab-r1n[1-2]", True)]
    assert [c[1:] for c in calls] == [["slurm", "resume", "lab-r2n3", "--spool", "/spool"],
                                      ["slurm", "suspend", "lab-r1n[1-2]", "--spool", "/spool"]]
    assert calls[0][0].endswith("gpufleet")
    assert sorted(os.listdir(tmp_path)) == [".request.tmp123"]


def test_a_refused_or_garbled_request_is_kept_with_the_answer(tmp_path):
    (tmp_path / "1-resume.request").write_text("resume bad[list\n")
    (tmp_path / "2-x.request").write_text("reboot lab-r1n1\n")

    def refuse(argv, **_kw):
        return types.SimpleNamespace(returncode=1, stdout="", stderr="the resume host list is malformed")
    got = powersave.relay_once(str(tmp_path), "/spool", run=refuse)
    assert got == [("resume", "bad[list", False), (None, None, False)]
    assert sorted(os.listdir(tmp_path)) == ["1-resume.refused", "2-x.refused"]
    assert "malformed" in (tmp_path / "1-resume.refused").read_text()


def test_the_program_script_writes_what_the_relay_reads(tmp_path):
    # the script's folder is fixed (the container path); run a copy pointed at tmp_path
    script = open(os.path.join(PROGRAMS, "gpufleet-slurm-relay")).read().replace(
        "dir=%s" % powersave.IN_CONTAINER, "dir=%s" % tmp_path)
    copy = tmp_path / "gpufleet-slurm-resume-fail"
    copy.write_text(script)
    copy.chmod(0o755)
    subprocess.run([str(copy), "lab-r1n[3-4]"], check=True)
    calls = []
    powersave.relay_once(str(tmp_path), "/spool", run=lambda argv, **kw: calls.append(argv) or _ok(argv))
    assert [c[2:4] for c in calls] == [["resume-fail", "lab-r1n[3-4]"]]
    bad = subprocess.run([str(tmp_path / "gpufleet-slurm-resume-fail")], capture_output=True, text=True)
    assert bad.returncode == 2 and "no host list" in bad.stderr


def test_slurm_accepts_the_programs_only_when_not_group_or_world_writable():
    # slurmctld's _valid_prog refuses a program with group or world write permission
    for name in ("gpufleet-slurm-resume", "gpufleet-slurm-suspend", "gpufleet-slurm-resume-fail"):
        mode = os.stat(os.path.join(PROGRAMS, name)).st_mode
        assert mode & 0o111 and not mode & 0o022, (name, oct(mode))
