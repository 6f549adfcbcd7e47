#!/usr/bin/env python3
"""Build and run the lab's Slurm controller (Debian slurm-wlm + munge) in a container.

    python3 lab/slurm/slurmctld.py build [--force]
    python3 lab/slurm/slurmctld.py start --name NAME --network NET --nodes 'node[01-08]' \
        --munge-key-file KEY [--cluster gpufleet] [--hostname ctl] [--node-conf 'CPUs=1 RealMemory=64']
    python3 lab/slurm/slurmctld.py stop --name NAME

Importable too (``build_image``, ``start_controller``, ``wait_ready``, ``stop_controller``).
The interface is documented in docs/roles.md.
"""
import argparse
import hashlib
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
IMAGE = os.environ.get("GPUFLEET_SLURMCTLD_IMAGE", "gpufleet/slurmctld:bookworm")
NODE_IMAGE = os.environ.get("GPUFLEET_SLURM_NODE_IMAGE", "gpufleet-mol-node:bookworm")
BASE_IMAGE = os.environ.get("GPUFLEET_BASE_IMAGE", "gpufleet/debian-base:bookworm")
KEY_IN_CONTAINER = "/etc/gpufleet/munge.key"


class SlurmLabError(Exception):
    """A controller image or container could not be built, started or reached."""


def _docker(*args, check=True):
    proc = subprocess.run(["docker"] + list(args), capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise SlurmLabError("docker %s failed (exit %d): %s" % (args[0], proc.returncode, proc.stderr.strip()[-800:]))
    return proc


def image_exists(image):
    return _docker("image", "inspect", image, check=False).returncode == 0


SOURCE_LABEL = "org.gpufleet.lab.source-sha256"


def source_digest(dockerfile):
    """sha256 of ``dockerfile`` and of each file its COPY lines take from this folder: an image
    built from other sources (an older entry point) is stale and is built again."""
    digest = hashlib.sha256()
    path = os.path.join(HERE, dockerfile)
    with open(path, "rb") as handle:
        text = handle.read()
    digest.update(text)
    for line in text.decode().splitlines():
        words = line.split()
        if words[:1] == ["COPY"]:
            for name in words[1:-1]:
                with open(os.path.join(HERE, name), "rb") as handle:
                    digest.update(name.encode() + b"\0" + handle.read())
    return digest.hexdigest()


def _image_source(image):
    proc = _docker("image", "inspect", "--format", '{{index .Config.Labels "%s"}}' % SOURCE_LABEL, image, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


def build_image(image=IMAGE, dockerfile="Dockerfile.slurmctld", force=False):
    """Build ``image`` from the base image (about a minute); keep an existing one built from
    the same sources unless force."""
    wanted = source_digest(dockerfile)
    if _image_source(image) == wanted and not force:
        return False
    if not image_exists(BASE_IMAGE):
        raise SlurmLabError("base image %s is missing: run `make base-image` first" % BASE_IMAGE)
    _docker("build", "-q", "--build-arg", "BASE_IMAGE=" + BASE_IMAGE, "--label", "%s=%s" % (SOURCE_LABEL, wanted),
            "-t", image, "-f", os.path.join(HERE, dockerfile), HERE)
    return True


def start_controller(name, network, nodes, munge_key_file, cluster="gpufleet", hostname="ctl",
                     node_conf=None, partition="batch", slurm_conf=None, image=IMAGE, mounts=(), conf_extra=None):
    """Start a controller container on ``network``; nodes reach it as ``hostname``.
    ``mounts``: (host path, container path, "ro"|"rw") bind mounts; ``conf_extra``: lines
    appended to the rendered slurm.conf."""
    if not os.path.isfile(munge_key_file) or os.path.getsize(munge_key_file) < 32:
        raise SlurmLabError("munge key %s is missing or shorter than 32 bytes: create one with "
                            "`head -c 1024 /dev/urandom > %s`" % (munge_key_file, munge_key_file))
    args = ["run", "-d", "--name", name, "--hostname", hostname, "--network", network,
            "--network-alias", hostname,
            "-e", "GPUFLEET_SLURM_CLUSTER=" + cluster, "-e", "GPUFLEET_SLURM_NODES=" + nodes,
            "-e", "GPUFLEET_SLURM_PARTITION=" + partition,
            "-v", "%s:%s:ro" % (os.path.abspath(munge_key_file), KEY_IN_CONTAINER)]
    if node_conf:
        args += ["-e", "GPUFLEET_SLURM_NODE_CONF=" + node_conf]
    if conf_extra:
        args += ["-e", "GPUFLEET_SLURM_CONF_EXTRA=" + conf_extra]
    if slurm_conf:
        args += ["-v", "%s:/etc/gpufleet/slurm.conf:ro" % os.path.abspath(slurm_conf)]
    for host_path, container_path, mode in mounts:
        args += ["-v", "%s:%s:%s" % (os.path.abspath(host_path), container_path, mode)]
    _docker(*(args + [image]))
    wait_ready(name)
    return name


def wait_ready(name, timeout=60.0):
    """Wait until slurmctld answers ``scontrol ping`` and the hold drain is applied."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _docker("exec", name, "test", "-e", "/run/gpufleet-slurmctld.ready", check=False).returncode == 0:
            return
        if _docker("inspect", "-f", "{{.State.Running}}", name, check=False).stdout.strip() != "true":
            logs = _docker("logs", "--tail", "30", name, check=False)
            raise SlurmLabError("controller container %s exited:\n%s%s" % (name, logs.stdout, logs.stderr))
        time.sleep(0.5)
    raise SlurmLabError("controller %s did not become ready within %.0f s: see `docker logs %s`" % (name, timeout, name))


def stop_controller(name):
    _docker("rm", "-f", name, check=False)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    build = sub.add_parser("build", help="build %s (and --node the Molecule node image)" % IMAGE)
    build.add_argument("--force", action="store_true")
    build.add_argument("--node", action="store_true", help="also build %s" % NODE_IMAGE)
    start = sub.add_parser("start", help="start a controller container")
    start.add_argument("--name", required=True)
    start.add_argument("--network", required=True)
    start.add_argument("--nodes", required=True, help="Slurm hostlist, e.g. node[01-08]")
    start.add_argument("--munge-key-file", required=True)
    start.add_argument("--cluster", default="gpufleet")
    start.add_argument("--hostname", default="ctl")
    start.add_argument("--partition", default="batch")
    start.add_argument("--node-conf", default=None)
    start.add_argument("--slurm-conf", default=None, help="use this slurm.conf instead of the rendered one")
    stop = sub.add_parser("stop", help="remove a controller container")
    stop.add_argument("--name", required=True)
    opts = parser.parse_args(argv)
    try:
        if opts.cmd == "build":
            build_image(force=opts.force)
            if opts.node:
                build_image(NODE_IMAGE, "Dockerfile.node", force=opts.force)
        elif opts.cmd == "start":
            start_controller(opts.name, opts.network, opts.nodes, opts.munge_key_file, opts.cluster,
                             opts.hostname, opts.node_conf, opts.partition, opts.slurm_conf)
            print(opts.name)
        else:
            stop_controller(opts.name)
    except SlurmLabError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
