"""Start, stop, inspect and fault-inject the lab: the logic behind ``gpufleet lab``.

``up`` starts, in order: one BMC emulator per rack (lab/bmc, TLS + htpasswd, events
hooked to the node manager), then unless ``bmc_only``: the docker network, per-node
hardware models (lab/hwsim), the node manager (twin.daemon) and the Slurm controller
(lab/slurm). Nodes stay powered off: the lifecycle playbooks power them on through
Redfish. ``down`` removes exactly what ``up`` created.
"""
import json
import os
import signal
import subprocess
import sys
import time

import requests
import yaml

from lab.hwsim.simtools.model import FAULT_TYPES as HWSIM_FAULT_TYPES
from lab.twin import boottime, powersave
from lab.twin import secrets as lab_secrets
from lab.twin.docker import Docker
from lab.twin.errors import LabError

__all__ = ["up", "down", "status", "publish_image", "inject_fault", "clear_faults", "FAULT_TYPES"]

LAB_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# a BMC-side fault: the node's BMC reports system health Critical (lab/bmc/layer.py); the node
# itself is untouched
BMC_FAULTS = ("bmc_critical",)
# the node-side faults are the hardware model's own (one list for the shims and this command)
FAULT_TYPES = HWSIM_FAULT_TYPES + BMC_FAULTS
# faults of one GPU: `gpu` (index) defaults to 0, as the xid shim's does
GPU_FAULTS = ("missing_gpu", "faulty_gpu", "xid", "degraded_nvlink", "ecc", "thermal_slowdown", "ecc_under_load",
              "fabric_down")


def _write_yaml(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        yaml.safe_dump(data, handle, sort_keys=False)
    return path


# Seconds before a power change lands on the twin's BMCs (uniform in the range): short, because
# every bring-up, park and wake of every scenario waits for them; still never instant, so a
# reader between the request and the change sees the old state as on a real BMC.
DEFAULT_POWER_DELAY = (1, 4)


def bmc_config(cfg):
    """The lab/bmc config for this lab: one rack entry per rack, nodes named like the inventory."""
    racks = []
    for index in range(1, cfg.racks + 1):
        members = [n for n in cfg.nodes if n.rack == "r%d" % index]
        racks.append({"name": "r%d" % index, "address": members[0].bmc_address, "port": members[0].bmc_port,
                      "firmware": dict(cfg.bmc.get("firmware") or {}),
                      "nodes": [{"name": n.name} for n in members]})
    return {"state_dir": cfg.bmc_state_dir, "username": cfg.bmc["username"], "password_file": cfg.bmc_password_file,
            "tls": True, "hook_url": cfg.hook_url, "events_file": cfg.path("bmc", "events.jsonl"),
            "vmedia_fetch": "head", "health_dir": _health_dir(cfg), "racks": racks,
            "power_delay": list(cfg.bmc.get("power_delay") or DEFAULT_POWER_DELAY)}


def _health_dir(cfg):
    """Where `lab fault NODE bmc_critical` leaves the health a node's BMC reports."""
    return cfg.path("bmc", "health")


def _bmc(action, cfg):
    path = _write_yaml(cfg.path("bmc.yml"), bmc_config(cfg))
    proc = subprocess.run([sys.executable, "-m", "lab.bmc.labctl", action, "--config", path], capture_output=True, text=True)
    if proc.returncode != 0:
        raise LabError("Lab BMC %s failed (exit %d): %s %s. Logs: %s/logs/."
                       % (action, proc.returncode, proc.stdout[-800:], proc.stderr[-800:], cfg.bmc_state_dir))
    return proc.stdout


def write_models(cfg):
    """One hardware model per node (from lab/hwsim/models/<hwsim.model>), faults cleared."""
    source = os.path.join(LAB_DIR, "hwsim", "models", cfg.hwsim.get("model", "healthy.json"))
    with open(source) as handle:
        base = json.load(handle)
    for node in cfg.nodes:
        _write_model(cfg, node.name, dict(base, node=node.name, faults=[]))


def _model_path(cfg, node):
    return cfg.path("hwsim", node, "hwmodel.json")


def _write_model(cfg, node, model):
    path = _model_path(cfg, node)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(model, handle, indent=1)
    os.replace(tmp, path)  # the node sees the directory mount, so the new file appears at once


def inject_fault(cfg, node, fault_type, **params):
    """Add a fault to a node's hardware model (seen by its shims on their next run)."""
    cfg.node(node)
    if fault_type not in FAULT_TYPES:
        raise LabError("Unknown fault %r. Known faults: %s." % (fault_type, ", ".join(FAULT_TYPES)))
    if fault_type in BMC_FAULTS:
        os.makedirs(_health_dir(cfg), exist_ok=True)
        with open(os.path.join(_health_dir(cfg), node), "w") as handle:
            handle.write("Critical\n")
        return {"node": node, "faults": [dict(params, type=fault_type)]}
    if fault_type in GPU_FAULTS:
        # one GPU's fault: without a GPU index it matched no GPU and the node passed its gate
        params.setdefault("gpu", 0)
        if not isinstance(params["gpu"], int) or isinstance(params["gpu"], bool) or params["gpu"] < 0:
            raise LabError("Fault %s: gpu must be a GPU index (0, 1, ...), got %r. Fix: --param gpu=N."
                           % (fault_type, params["gpu"]))
    try:
        with open(_model_path(cfg, node)) as handle:
            model = json.load(handle)
    except (OSError, ValueError) as exc:
        raise LabError("Cannot read the hardware model of %s: %s. Start the lab first (`gpufleet lab up`)."
                       % (node, exc))
    if fault_type in ("ecc", "ecc_under_load") and "corrected" not in params and "uncorrected" not in params:
        # an ecc fault with no counts changed nothing: the node passed its gate
        params["uncorrected"] = 1
    if fault_type == "slow_hca":
        hcas = [h.get("name") for h in model.get("hcas") or []]
        # a slow_hca fault naming no HCA matched none: the node passed its gate
        params.setdefault("hca", hcas[0] if hcas else None)
        if params["hca"] not in hcas:
            raise LabError("Fault slow_hca: %s has no HCA %r (it has %s). Fix: --param hca=NAME."
                           % (node, params["hca"], ", ".join(hcas) or "none"))
    model.setdefault("faults", []).append(dict(params, type=fault_type))
    _write_model(cfg, node, model)
    return model


def clear_faults(cfg, node=None):
    for name in [node] if node else [n.name for n in cfg.nodes]:
        try:
            os.remove(os.path.join(_health_dir(cfg), name))
        except FileNotFoundError:
            pass
        path = _model_path(cfg, name)
        if os.path.exists(path):
            with open(path) as handle:
                model = json.load(handle)
            _write_model(cfg, name, dict(model, faults=[]))


def _pid_alive(path):
    try:
        with open(path) as handle:
            pid = int(handle.read().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def _start_manager(cfg, config_path):
    pid_path = cfg.path("manager.pid")
    if _pid_alive(pid_path):
        return
    log = open(cfg.path("manager.log"), "ab")
    # The manager runs from lab/, where no ansible.cfg names the collections path: hand it the
    # path this process found, so its `import gpufleet` reaches the same collection.
    from gpufleet.collection import collections_path
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path())
    proc = subprocess.Popen([sys.executable, "-m", "lab.twin.daemon", "--config", config_path], cwd=LAB_DIR,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    with open(pid_path, "w") as handle:
        handle.write(str(proc.pid))
    for _ in range(100):
        if proc.poll() is not None:
            raise LabError("The lab node manager exited at start; see %s." % cfg.path("manager.log"))
        try:
            requests.get(cfg.hook_url.replace("/events", "/nodes"), timeout=1)
            return
        except requests.RequestException:
            time.sleep(0.1)
    raise LabError("The lab node manager did not answer at %s; see %s." % (cfg.hook_url, cfg.path("manager.log")))


def _slurm_module():
    from lab.slurm import slurmctld
    return slurmctld


def _powersave_mounts(cfg):
    """The power-saving programs (read-only) and the request folder they share with the lab
    manager (lab/twin/powersave.py); writable by slurmctld's SlurmUser."""
    os.makedirs(cfg.powersave_dir, exist_ok=True)
    os.chmod(cfg.powersave_dir, 0o1777)
    os.makedirs(cfg.controller_spool, exist_ok=True)
    return ((os.path.join(LAB_DIR, "slurm", "powersave"), powersave.PROGRAMS_IN_CONTAINER, "ro"),
            (cfg.powersave_dir, powersave.IN_CONTAINER, "rw"))


def _start_slurm(cfg, docker):
    key = lab_secrets.ensure_secret(cfg.state_dir, lab_secrets.MUNGE_KEY)
    name = cfg.slurm["container"]
    if docker.running(name):
        return key
    docker("rm", "-f", name, check=False)
    slurm = _slurm_module()
    try:
        slurm.build_image()
        slurm.start_controller(name, cfg.docker["network"], cfg.slurm_hostlist(), key, cluster=cfg.slurm["cluster"],
                               hostname=cfg.slurm["hostname"], partition=cfg.slurm["partition"],
                               mounts=_powersave_mounts(cfg))
    except slurm.SlurmLabError as exc:
        raise LabError("The lab's Slurm controller did not start: %s" % exc)
    return key


def publish_image(cfg, version="lab", log=print, docker=None):
    """Verify a built image and publish it to the lab's artifact server (hard links).

    The lab serves its own copy, so rebuilding build/images/<version> never changes media
    a node is being imaged from. An image that does not verify is refused. The verified
    artifact is also imported as its disk image now (``media.import_disk``), not by the first
    install of a fresh lab.
    """
    from lab.twin.media import MANIFEST, SIGNATURE, import_disk, verify_built
    source = os.path.join(cfg.images_root, version)
    summary = verify_built(os.path.join(source, MANIFEST), cfg.image_public_key, version)
    dest = os.path.join(cfg.artifacts_root, version)
    staging = dest + ".tmp"
    subprocess.run(["rm", "-rf", staging], check=False)
    os.makedirs(staging)
    for name in (MANIFEST, SIGNATURE, os.path.basename(summary["artifact"])):
        try:
            os.link(os.path.join(source, name), os.path.join(staging, name))
        except OSError:
            subprocess.run(["cp", os.path.join(source, name), os.path.join(staging, name)], check=True)
    subprocess.run(["rm", "-rf", dest], check=False)
    os.replace(staging, dest)
    import_disk(docker or Docker(), cfg.docker["disk_repository"], summary)
    log("published image %s (build %s) to %s" % (version, summary["build_id"], cfg.media_url(version)))
    return summary


def _model_hcas(cfg):
    """HCA names of the lab's hardware model: the gate's ib_write_bw targets (shimmed)."""
    with open(os.path.join(LAB_DIR, "hwsim", "models", cfg.hwsim.get("model", "healthy.json"))) as handle:
        return [h["name"] for h in json.load(handle).get("hcas") or []]


def playbook_vars(cfg, munge_key):
    """Extra vars that point the lifecycle playbooks at this lab (lab-only credentials)."""
    return {
        "gpufleet_gate_hcas": _model_hcas(cfg),
        # what differs in the lab is said as settings, not as "this is the lab": its containers
        # have no RDMA rails and run Slurm and the label agent without systemd
        "gpufleet_configure_fabric": False,
        "gpufleet_service_manager": "direct",
        "gpufleet_lab_state_dir": cfg.state_dir,
        "gpufleet_ledger": cfg.path("ledger.sqlite"),
        "gpufleet_report_dir": cfg.path("reports"),
        "vault_gpufleet_bmc_username": cfg.bmc["username"],
        # A lookup of the lab's secret file, not the password: this file is written to disk
        # and read by ansible-runner, which may copy extra vars into its artifacts.
        "vault_gpufleet_bmc_password": "{{ lookup('ansible.builtin.file', %r) }}" % cfg.bmc_password_file,
        "gpufleet_bmc_ca_path": cfg.bmc_ca,
        "gpufleet_image_version": "lab",
        "gpufleet_image_url": cfg.media_url("lab"),
        "gpufleet_image_public_key": cfg.image_public_key,
        "gpufleet_image_manifest": os.path.join(cfg.artifacts_root, "lab", "manifest.json"),
        # the image catalogue (gpufleet.controller.images): where `gpufleet lab publish --version V`
        # puts V, for rollouts (`gpufleet refresh`) and renewals
        "gpufleet_image_manifest_template": os.path.join(cfg.artifacts_root, "{version}", "manifest.json"),
        "gpufleet_image_url_template": cfg.media_url("{version}"),
        "gpufleet_gate_path_dirs": ["/opt/gpufleet-lab-hwsim/bin"],
        "gpufleet_slurm_controller_host": cfg.slurm["container"],
        # where `gpufleet slurm resume|suspend|resume-fail` leave requests (lab/twin/powersave.py)
        "gpufleet_controller_spool": cfg.controller_spool,
        "gpufleet_slurm_controller": cfg.slurm["hostname"],
        # The lab's slurmctld is a container: reach it over the docker connection.
        "gpufleet_slurm_controller_connection": "community.docker.docker",
        "gpufleet_slurm_controller_address": cfg.slurm["container"],
        # The lab SKU's gate profile is lab material (lab/profiles/gate), not a shipped profile.
        "gpufleet_gate_profile_dir": os.path.join(LAB_DIR, "profiles", "gate"),
        "gpufleet_munge_key_file": munge_key,
        # Lab nodes are unprivileged containers: docker owns the kernel host name and
        # bind-mounts /etc/hosts, and they have no RDMA rails to configure.
        "node_identity_set_runtime_hostname": False,
        "node_identity_unsafe_writes": True,
        "gpufleet_configure_fabric": False,
        # one machine, 2 cores: measure one fabric set at a time so sets do not share the CPU
        "gpufleet_fabric_parallel_sets": 1,
        # and at most 4 nodes run their single-node gate phases (fio on the one disk) at once
        "gpufleet_gate_parallel_nodes": 4,
    }


def _racks_up(cfg):
    """Map rack name -> whether its emulator answers on its address."""
    answers = {}
    for rack in bmc_config(cfg)["racks"]:
        url = "https://%s:%s/redfish/v1/" % (rack["address"], rack["port"])
        try:
            answers[rack["name"]] = requests.get(url, verify=cfg.bmc_ca, timeout=3).status_code < 500
        except (requests.RequestException, OSError):
            answers[rack["name"]] = False
    return answers


def up(cfg, bmc_only=False, log=print):
    """Start the lab (idempotent: what already runs is kept); returns the playbook vars path."""
    os.makedirs(cfg.state_dir, exist_ok=True)
    config_path = _write_yaml(cfg.path("lab.yml"), cfg.public_raw())
    if all(_racks_up(cfg).values()):
        log("BMC emulators already answer")
    else:
        log(_bmc("start", cfg).strip())
    if bmc_only:
        return _write_yaml(cfg.path("vars.yml"), playbook_vars(cfg, None))
    docker = Docker()
    if not docker.exists("network", cfg.docker["network"]):
        docker("network", "create", "--label", Docker.LABEL, cfg.docker["network"])
    if not os.path.isdir(cfg.path("hwsim")):
        write_models(cfg)
    os.makedirs(cfg.artifacts_root, exist_ok=True)
    # node containers preload it; a lab starts with it passing the kernel's uptime through
    boottime.build(cfg)
    boottime.disable(cfg)
    _start_manager(cfg, config_path)
    log("node manager: hooks %s, artifacts %s" % (cfg.hook_url, cfg.artifact_url))
    key = _start_slurm(cfg, docker)
    log("slurm controller: %s (%d nodes held until their gate passes)" % (cfg.slurm["container"], len(cfg.nodes)))
    return _write_yaml(cfg.path("vars.yml"), playbook_vars(cfg, key))


def _stop_pid(path):
    pid = _pid_alive(path)
    if pid:
        os.kill(pid, signal.SIGTERM)
        for _ in range(50):
            if not _pid_alive(path):
                break
            time.sleep(0.1)
    if os.path.exists(path):
        os.remove(path)


def kill_controller(pidfile):
    """SIGKILL the capacity controller recorded in ``pidfile`` (lab/controller_demo.py writes it)
    when that process still runs ``gpufleet controller run``: it runs in its own session, so it
    outlives a killed test run, and would go on acting on the next lab. Returns its pid or None."""
    pid = _pid_alive(pidfile)
    if not pid:
        return None
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    if "controller run" not in cmdline:
        return None
    os.kill(pid, signal.SIGKILL)
    return pid


def down(cfg, purge=False, log=print):
    """Stop everything ``up`` started, and a capacity controller started on it; ``purge`` also
    deletes disks and lab state."""
    docker = Docker()
    if kill_controller(cfg.path("controller.pid")):
        log("stopped the capacity controller running on the lab")
    _stop_pid(cfg.path("manager.pid"))
    if os.path.exists(cfg.path("bmc.yml")):
        log(_bmc("stop", cfg).strip())
    names = docker.out("ps", "-aq", "--filter", "label=" + Docker.LABEL, check=False).split()
    if names:
        docker("rm", "-f", *names)
    docker("rm", "-f", cfg.slurm["container"], check=False)
    docker("network", "rm", cfg.docker["network"], check=False)
    log("removed %d node containers and the Slurm controller" % len(names))
    if purge:
        disks = docker.out("images", "-q", cfg.docker["disk_repository"], check=False).split()
        if disks:
            docker("rmi", "-f", *sorted(set(disks)), check=False)
        subprocess.run(["rm", "-rf", cfg.state_dir], check=False)
        log("purged lab disks and %s" % cfg.state_dir)


def status(cfg):
    """What runs: BMC racks, manager, node containers, Slurm node states."""
    docker = Docker()
    racks = _racks_up(cfg)
    try:
        nodes = requests.get(cfg.hook_url.replace("/events", "/nodes"), timeout=3).json()
    except (requests.RequestException, ValueError):
        nodes = {}
    running = set(docker.out("ps", "--filter", "label=" + Docker.LABEL, "--format", "{{.Names}}", check=False).split())
    sinfo = docker.out("exec", cfg.slurm["container"], "sinfo", "-N", "-h", "-o", "%N %t %E", check=False)
    slurm = {}
    for line in sinfo.splitlines():
        parts = line.split(None, 2)
        if len(parts) >= 2:
            slurm[parts[0]] = {"state": parts[1], "reason": parts[2] if len(parts) > 2 else ""}
    return {"bmc_racks": racks, "manager": bool(nodes), "nodes": {
        n.name: {"container": cfg.container(n.name) in running, "disk": (nodes.get(n.name) or {}).get("version"),
                 "last_error": (nodes.get(n.name) or {}).get("last_error"), "slurm": slurm.get(n.name)}
        for n in cfg.nodes}}
