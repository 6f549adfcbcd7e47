"""Search everything a lab run wrote for the lab's secrets (docs/reliability.md, "Secrets").

Secrets: the BMC password (also as the HTTP basic-auth token it travels in), the munge key,
the image signing private key (its PEM body, line by line) and its passphrase when
GPUFLEET_SIGNING_KEY_PASSPHRASE is set. Searched: ansible-runner artifacts (build/runs),
the lab state dir (ledger, reports, gate raw outputs, vars, configs, manager and BMC logs)
minus the secret files themselves and the served image artifacts, the fault runs' console
logs, and the docker logs of the lab's containers.
"""
import base64
import os
import subprocess

__all__ = ["lab_secrets", "scan_for_secrets"]

SKIP_DIRS = ("secrets", "artifacts")


def _pem_lines(path):
    try:
        with open(path) as handle:
            lines = [line.strip() for line in handle if line.strip() and not line.startswith("-----")]
    except OSError:
        return []
    return [line for line in lines if len(line) >= 40]


def lab_secrets(root, state_dir):
    """{label: bytes} of every secret form to look for."""
    found = {}
    with open(os.path.join(state_dir, "secrets", "bmc-password")) as handle:
        password = handle.read().strip()
    found["BMC password"] = password
    found["BMC basic-auth token"] = base64.b64encode(("admin:%s" % password).encode()).decode()
    with open(os.path.join(state_dir, "secrets", "munge.key")) as handle:
        munge = handle.read().strip()
    found["munge key"] = munge
    found["munge key (first half)"] = munge[:len(munge) // 2]
    for index, line in enumerate(_pem_lines(os.path.join(root, "build", "keys", "lab-signing.key"))):
        found["signing key line %d" % (index + 1)] = line
    if os.environ.get("GPUFLEET_SIGNING_KEY_PASSPHRASE"):
        found["signing key passphrase"] = os.environ["GPUFLEET_SIGNING_KEY_PASSPHRASE"]
    return dict((label, value.encode()) for label, value in found.items())


def _files(root, state_dir):
    for top in (os.path.join(root, "build", "runs"), state_dir):
        for here, dirs, names in os.walk(top):
            if os.path.abspath(here) == os.path.abspath(state_dir):
                dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
            for name in names:
                yield os.path.join(here, name)
    build = os.path.join(root, "build")
    for name in os.listdir(build):
        if name.startswith("fault-") and name.endswith(".log"):
            yield os.path.join(build, name)


def _docker_logs():
    names = subprocess.run(["docker", "ps", "-a", "--filter", "label=gpufleet-lab=1", "--format", "{{.Names}}"],
                           capture_output=True, text=True, check=False).stdout.split()
    for name in names + ["gpufleet-lab-slurmctld"]:
        proc = subprocess.run(["docker", "logs", name], capture_output=True, check=False)
        yield "docker logs " + name, proc.stdout + proc.stderr


def scan_for_secrets(root, state_dir):
    """[(where, which secret)] for every hit; [] when nothing leaked."""
    wanted = lab_secrets(root, state_dir)
    assert wanted["BMC password"] and wanted["munge key"] and "signing key line 1" in wanted, \
        "the lab has no secrets to search for"
    hits = []
    for path in _files(root, state_dir):
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        hits += [(path, label) for label, value in wanted.items() if value in data]
    for where, data in _docker_logs():
        hits += [(where, label) for label, value in wanted.items() if value in data]
    return hits
