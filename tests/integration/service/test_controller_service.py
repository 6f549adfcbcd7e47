"""The controller as a systemd service (docs/service.md), in a systemd-booted container.

The node image of the roles' systemd scenarios (gpufleet-sysd-node:bookworm: Debian 12,
systemd 252 as PID 1) gets the controller the way docs/service.md installs it: a venv under
/opt/gpufleet with the gpufleet wheel built from controller/, the collection tarball installed
with ansible-galaxy, the unit and the sysusers file from contrib/systemd/ and
/etc/gpufleet/controller.yml. No network: the venv's dependencies are the files of the
distributions the host's venv already has (what the wheel requires, and pip), and the wheel is
then installed with pip inside the container.

Slurm is a stand-in: a script given as ``slurm_prefix`` that answers ``squeue --json`` and
``sinfo --json`` with an empty cluster, so the passes read the world and plan (nothing to do).

The container gets CAP_SYS_ADMIN (not --privileged, which this docker host refuses): without it
systemd cannot build the unit's mount namespace and silently runs it without ProtectSystem=,
and the hardening checks below would prove nothing.
"""
import importlib.metadata
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import uuid

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.helpers import ROOT, ensure_base_image, need, need_docker

NODE_IMAGE = "gpufleet-sysd-node:bookworm"
VENV = "/opt/gpufleet"
COLLECTIONS = "/usr/share/ansible/collections"
UNIT = "gpufleet-controller"
METRICS = "http://127.0.0.1:9464/metrics"
PROBE_DIR = "/srv/gpufleet-probe"         # owned by the service user, outside ReadWritePaths=
STAGE = "/var/tmp/gpufleet-install"       # docker cp cannot write into the tmpfs on /tmp

CONFIG = """\
policy: capacity.yml
inventory: rack.yml
ledger: /var/lib/gpufleet/ledger.sqlite
slurm_prefix: /usr/local/bin/slurm-standin
spool: /var/spool/gpufleet-controller
id: ctl-svc
interval: 2s
lease_ttl: 30s
metrics:
  port: 9464
"""
# an empty rack: the pool's group exists and has no member yet
INVENTORY = "all:\n  children:\n    gpu_nodes:\n      hosts: {}\n"
SLURM_STANDIN = """\
#!/bin/sh
# squeue/sinfo --json of a cluster with no job and no node
case "$1" in
  squeue) echo '{"jobs": []}' ;;
  sinfo) echo '{"nodes": []}' ;;
  *) echo "slurm-standin: unknown command $1" >&2; exit 2 ;;
esac
"""


def sh(container, script, check=True, timeout=120):
    proc = subprocess.run(["docker", "exec", container, "sh", "-c", script], capture_output=True, text=True,
                          timeout=timeout, check=False)
    if check and proc.returncode != 0:
        pytest.fail("in %s: %s\nexit %d\n%s%s" % (container, script, proc.returncode, proc.stdout[-3000:],
                                                  proc.stderr[-3000:]))
    return proc


def show(container, *props):
    """{property: value} of the unit (systemctl show)."""
    out = sh(container, "systemctl show %s -p %s" % (UNIT, ",".join(props))).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def _node_image():
    """The roles' systemd node image, built as their Molecule test builds it (a no-op when cached)."""
    base = ensure_base_image()
    dockerfile = os.path.join(ROOT, "roles", "cluster_join", "molecule", "systemd", "node.Dockerfile")
    proc = subprocess.run(["docker", "build", "-q", "--build-arg", "BASE_IMAGE=" + base, "-t", NODE_IMAGE,
                           "-f", dockerfile, os.path.dirname(dockerfile)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.fail("building %s failed:\n%s%s" % (NODE_IMAGE, proc.stdout[-2000:], proc.stderr[-2000:]))


def _build_wheel(out):
    """The gpufleet wheel from a copy of controller/ (the checkout stays untouched), offline: with
    the first Python that has setuptools and wheel (the venv's, else the system's, which Debian's
    python3-pip brings)."""
    src = os.path.join(out, "src")
    shutil.copytree(os.path.join(ROOT, "controller"), src,
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
    tried = []
    for python in (sys.executable, "/usr/bin/python3"):
        if not os.path.exists(python):
            continue
        proc = subprocess.run([python, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                               "-w", out, src], capture_output=True, text=True, check=False)
        wheels = [f for f in os.listdir(out) if f.startswith("gpufleet-") and f.endswith(".whl")]
        if proc.returncode == 0 and wheels:
            return os.path.join(out, wheels[0])
        tried.append("%s: %s" % (python, (proc.stderr.strip().splitlines() or ["no wheel"])[-1]))
    need(False, "no Python here builds the gpufleet wheel offline (needs setuptools and wheel): " + "; ".join(tried))


def _build_collection(out):
    proc = subprocess.run([os.path.join(ROOT, ".venv", "bin", "ansible-galaxy"), "collection", "build", "--force",
                           "--output-path", out, ROOT], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.fail("ansible-galaxy collection build failed:\n%s%s" % (proc.stdout[-2000:], proc.stderr[-2000:]))
    return os.path.join(out, [f for f in os.listdir(out) if f.endswith(".tar.gz")][0])


def _closure(names):
    """The installed distributions ``names`` need (markers evaluated, no extras), by name."""
    seen, todo = {}, list(names)
    while todo:
        req = Requirement(todo.pop())
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        key = canonicalize_name(req.name)
        if key not in seen:
            seen[key] = importlib.metadata.distribution(req.name)
            todo.extend(seen[key].requires or [])
    return seen


def _venv_payload():
    """A tar (rooted at the venv) of the wheel's dependencies and pip from this venv's
    site-packages, with their console scripts written for the container's venv."""
    dists = _closure([str(r) for r in importlib.metadata.distribution("gpufleet").requires or []
                      if "extra ==" not in r] + ["pip"])
    buf = io.BytesIO()
    site = "lib/python%d.%d/site-packages/" % sys.version_info[:2]
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for dist in dists.values():
            for rel in dist.files or []:
                path = str(dist.locate_file(rel))
                if str(rel).startswith("..") or not os.path.isfile(path):
                    continue    # scripts with this venv's interpreter: written below instead
                tar.add(path, arcname=site + str(rel), recursive=False)
            for ep in dist.entry_points.select(group="console_scripts"):
                head, _, attr = ep.value.partition(":")
                body = ("#!%s/bin/python\nimport sys\nimport %s as entry\nsys.exit(entry.%s())\n"
                        % (VENV, head, attr)).encode()
                info = tarfile.TarInfo("bin/" + ep.name)
                info.size, info.mode = len(body), 0o755
                tar.addfile(info, io.BytesIO(body))
    return buf.getvalue()


def _put(container, path, text, mode="0644"):
    subprocess.run(["docker", "exec", "-i", container, "sh", "-c", "cat > %s && chmod %s %s" % (path, mode, path)],
                   input=text, text=True, check=True)


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """A booted container with the controller installed and its unit started; removed at the end."""
    need_docker()
    need(sys.version_info[:2] == (3, 11), "the container's venv reuses this venv's packages, so this venv must "
                                          "be Python 3.11 like Debian 12's")
    _node_image()
    out = str(tmp_path_factory.mktemp("svc-dist"))
    wheel, collection, payload = _build_wheel(out), _build_collection(out), _venv_payload()
    name = "gpufleet-svc-%s" % uuid.uuid4().hex[:8]
    subprocess.run(["docker", "run", "-d", "--name", name, "--cap-add", "SYS_ADMIN", "--cap-add", "SYS_PTRACE",
                    "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
                    "--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp",
                    "-v", "/sys/fs/cgroup:/sys/fs/cgroup:ro", NODE_IMAGE, "/sbin/init"],
                   capture_output=True, check=True)
    try:
        sh(name, "for i in $(seq 60); do s=$(systemctl is-system-running); "
                 "case $s in running|degraded) exit 0;; esac; sleep 0.5; done; exit 1")
        sh(name, "python3 -m venv --without-pip %s" % VENV)
        subprocess.run(["docker", "cp", "-", "%s:%s" % (name, VENV)], input=payload, check=True)
        sh(name, "mkdir -p " + STAGE)
        for path in [wheel, collection] + [os.path.join(ROOT, "contrib", "systemd", rel)
                                           for rel in ("gpufleet-controller.service", "gpufleet.sysusers.conf")]:
            subprocess.run(["docker", "cp", path, "%s:%s/" % (name, STAGE)], check=True)
        # docs/service.md, Install
        sh(name, "%(v)s/bin/python -m pip install -q --no-deps --no-index %(s)s/%(w)s && %(v)s/bin/python -m pip check"
                 " && %(v)s/bin/ansible-galaxy collection install --offline -p %(c)s %(s)s/%(t)s"
                 % {"v": VENV, "s": STAGE, "w": os.path.basename(wheel), "c": COLLECTIONS,
                    "t": os.path.basename(collection)})
        sh(name, "cd %s && install -m 0644 gpufleet.sysusers.conf /usr/lib/sysusers.d/gpufleet.conf && systemd-sysusers"
                 " && install -m 0644 gpufleet-controller.service /etc/systemd/system/"
                 " && install -d -m 0755 /etc/gpufleet"
                 " && install -d -o gpufleet -g gpufleet /var/spool/gpufleet-controller %s" % (STAGE, PROBE_DIR))
        wheel_policy = sh(name, "ls %s/lib/python3*/site-packages/gpufleet/capacity/examples/lab.yml" % VENV).stdout
        sh(name, "cp %s /etc/gpufleet/capacity.yml" % wheel_policy.strip())
        _put(name, "/etc/gpufleet/controller.yml", CONFIG)
        _put(name, "/etc/gpufleet/rack.yml", INVENTORY)
        _put(name, "/usr/local/bin/slurm-standin", SLURM_STANDIN, mode="0755")
        sh(name, "touch /tmp/installed && sleep 1")   # nothing under the code may be newer than this
        started = time.monotonic()
        start = sh(name, "systemctl daemon-reload && systemctl start %s" % UNIT, check=False, timeout=330)
        if start.returncode != 0:
            pytest.fail("systemctl start %s failed: %s\n%s" % (UNIT, start.stderr.strip(), sh(
                name, "journalctl -u %s --no-pager -o cat -n 40" % UNIT, check=False).stdout))
        yield {"name": name, "start_s": time.monotonic() - started}
    finally:
        subprocess.run(["docker", "rm", "-f", "-v", name], capture_output=True, check=False)


def _until(container, check, what, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.5)
    journal = sh(container, "journalctl -u %s --no-pager -n 40" % UNIT, check=False).stdout
    pytest.fail("%s not seen within %ss; the unit's journal:\n%s" % (what, timeout, journal))


def _metrics(container):
    return sh(container, "curl -fsS %s" % METRICS, check=False).stdout


def _sample(text, name):
    """The value of the first sample line of ``name`` (labels allowed), else None."""
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_ready_under_its_own_user(service):
    c = service["name"]
    props = show(c, "ActiveState", "SubState", "Type", "User", "MainPID", "StatusText")
    assert (props["ActiveState"], props["SubState"], props["Type"]) == ("active", "running", "notify"), props
    passwd = sh(c, "getent passwd gpufleet").stdout.strip().split(":")
    assert int(passwd[2]) < 1000 and passwd[5:] == ["/var/lib/gpufleet", "/usr/sbin/nologin"], passwd
    owner = sh(c, "stat -c %%U /proc/%s" % props["MainPID"]).stdout.strip()
    assert owner == "gpufleet"
    journal = sh(c, "journalctl -u %s --no-pager -o cat" % UNIT).stdout
    assert "state: /var/lib/gpufleet ($STATE_DIRECTORY)" in journal, journal[-2000:]


def test_passes_feed_the_watchdog_and_metrics(service):
    c = service["name"]
    text = _until(c, lambda: (lambda t: t if (_sample(t, 'gpufleet_controller_passes_total{result="ok"}') or 0) >= 2
                              else None)(_metrics(c)), "two successful passes in /metrics")
    assert _sample(text, "gpufleet_controller_build_info") == 1.0
    assert 'version="0.1.0"' in text
    last = _sample(text, "gpufleet_controller_last_successful_pass_timestamp_seconds")
    assert last is not None and abs(last - float(sh(c, "date +%s").stdout)) < 30
    assert (_sample(text, "gpufleet_controller_pass_duration_seconds_count") or 0) >= 2
    props = show(c, "WatchdogUSec", "WatchdogTimestampMonotonic", "StatusText", "NRestarts")
    assert props["WatchdogUSec"] == "5min", props
    # systemd sets the timestamp at start and moves it on each WATCHDOG=1: the passes move it
    fed = int(props["WatchdogTimestampMonotonic"])
    _until(c, lambda: int(show(c, "WatchdogTimestampMonotonic")["WatchdogTimestampMonotonic"]) > fed,
           "a WATCHDOG=1 after a pass (WatchdogTimestamp moving)", timeout=20)
    assert props["StatusText"].startswith("last pass ok"), props
    assert props["NRestarts"] == "0"


def test_state_under_var_lib_and_nothing_under_the_code(service):
    c = service["name"]
    _until(c, lambda: sh(c, "test -d /var/lib/gpufleet/runs/bmc", check=False).returncode == 0,
           "the background BMC read's run folder in /var/lib/gpufleet/runs")
    owners = sh(c, "stat -c '%U %a %n' /var/lib/gpufleet /var/lib/gpufleet/ledger.sqlite").stdout.split("\n")
    assert owners[0] == "gpufleet 750 /var/lib/gpufleet" and owners[1].startswith("gpufleet "), owners
    newer = sh(c, "find %s %s /etc/gpufleet -newer /tmp/installed" % (VENV, COLLECTIONS)).stdout
    assert newer == "", "written under the code or the config:\n" + newer


def test_hardening_holds_in_the_running_unit(service):
    c = service["name"]
    pid = show(c, "MainPID")["MainPID"]
    status = dict(line.split(":\t", 1) for line in sh(c, "cat /proc/%s/status" % pid).stdout.splitlines()
                  if ":\t" in line)
    assert int(status["CapBnd"], 16) == 0 and int(status["CapEff"], 16) == 0, status
    assert status["NoNewPrivs"].strip() == "1"
    as_service = "nsenter -t %s -m -S $(id -u gpufleet) -G $(id -g gpufleet) -- sh -c" % pid
    # the probe folder is the service user's, so only ProtectSystem=strict stops the write
    sh(c, "setpriv --reuid gpufleet --regid gpufleet --clear-groups touch %s/outside" % PROBE_DIR)
    denied = sh(c, "%s 'touch %s/inside'" % (as_service, PROBE_DIR), check=False)
    assert denied.returncode != 0 and "Read-only file system" in denied.stderr, denied
    allowed = sh(c, "%s 'touch /var/lib/gpufleet/probe /var/spool/gpufleet-controller/probe "
                    "&& rm /var/lib/gpufleet/probe /var/spool/gpufleet-controller/probe'" % as_service, check=False)
    assert allowed.returncode == 0, allowed.stderr
    home = sh(c, "%s 'ls /root'" % as_service, check=False)
    assert home.returncode != 0, "ProtectHome=yes: /root readable"


def test_stop_ends_cleanly(service):
    c = service["name"]
    started = time.monotonic()
    sh(c, "systemctl stop %s" % UNIT, timeout=120)
    stop_s = time.monotonic() - started
    props = show(c, "ActiveState", "Result")
    assert props == {"ActiveState": "inactive", "Result": "success"}, props
    assert sh(c, "systemctl is-failed %s" % UNIT, check=False).stdout.strip() == "inactive"
    # an exit other than 0 is logged by systemd as "Main process exited, code=..., status=..."
    journal = sh(c, "journalctl -u %s --no-pager -o cat" % UNIT).stdout
    assert "Deactivated successfully" in journal and "Main process exited" not in journal, journal[-3000:]
    assert "Traceback" not in journal, journal[-3000:]
    print(json.dumps({"start_s": round(service["start_s"], 1), "stop_s": round(stop_s, 1)}))
