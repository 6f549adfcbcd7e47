"""roles/cluster_join/files/gpufleet-direct-service: a dead daemon is not "running".

Where nothing reaps a stopped daemon (a container whose PID 1 is `sleep`), it stays a zombie
that `pgrep` still matches. The helper must not take it for a live slurmd: `ensure` would
report "running" for a node whose slurmd is dead (and `stop` would wait out its timeout).
Each case runs in its own PID namespace, so the host's (or the lab's) real slurmd processes
are not seen.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

HELPER = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "cluster_join",
                      "files", "gpufleet-direct-service")

# PID 1 of the namespace: starts a process named slurmd, kills it and never reaps it (a zombie),
# then asks the helper what it sees. Prints the helper's exit code and output as JSON.
PARENT = r"""
import json, os, subprocess, sys, time
fake, helper, action = sys.argv[1:4]
child = subprocess.Popen([fake, "1000"])
child.kill()
while open("/proc/%d/stat" % child.pid).read().split(") ")[1][0] != "Z":
    time.sleep(0.05)
run = subprocess.run(["bash", helper, action, "slurmd"], capture_output=True, text=True)
print(json.dumps({"rc": run.returncode, "stdout": run.stdout, "stderr": run.stderr,
                  "zombie_left": open("/proc/%d/stat" % child.pid).read().split(") ")[1][0] == "Z"}))
"""


def helper_beside_a_zombie_slurmd(tmp_path, action):
    unshare = shutil.which("unshare")
    if not unshare:
        pytest.fail("unshare (util-linux) is needed to give the helper its own process table")
    fake = tmp_path / "slurmd"
    shutil.copy(shutil.which("sleep"), fake)
    argv = [unshare, "--user", "--map-root-user", "--pid", "--fork", "--mount-proc",
            sys.executable, "-c", PARENT, str(fake), os.path.abspath(HELPER), action]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_ensure_does_not_take_a_zombie_for_a_running_slurmd(tmp_path):
    seen = helper_beside_a_zombie_slurmd(tmp_path, "ensure")
    assert seen["zombie_left"]
    # it tries to start slurmd (absent here, so that start fails) instead of saying "running"
    assert seen["stdout"].strip() != "running"
    assert seen["rc"] != 0

