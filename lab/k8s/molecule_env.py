#!/usr/bin/env python3
"""Prepare the host for the roles' Kubernetes Molecule scenarios (molecule/kubernetes).

Builds the node image ``gpufleet-k8s-node:bookworm`` (lab/k8s/Dockerfile.node; the base image
must exist) and one set of lab credentials per role under LAB_DIR/<role> (lab/k8s/k8s_pki.py), each
for the loopback address its scenario publishes the API simulation on. Prints the environment
the scenarios read. Lab only.
Usage: molecule_env.py LAB_DIR
"""
import os
import subprocess
import sys


from lab.k8s.k8s_pki import ensure_pki

__all__ = ["NODE_IMAGE", "SCENARIO_ADDRESSES", "build_node_image", "prepare"]

NODE_IMAGE = "gpufleet-k8s-node:bookworm"
# One loopback address per scenario (the area's range is 127.0.30.0/24), so they can run at once.
SCENARIO_ADDRESSES = {"cluster_join": "127.0.30.1", "node_labels": "127.0.30.2", "node_drain": "127.0.30.3"}
HERE = os.path.dirname(os.path.abspath(__file__))


def build_node_image(base_image="gpufleet/debian-base:bookworm"):
    proc = subprocess.run(["docker", "build", "-q", "-t", NODE_IMAGE, "--build-arg", "BASE_IMAGE=" + base_image,
                           "-f", os.path.join(HERE, "Dockerfile.node"), HERE],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError("docker build of %s failed (is %s built? `make base-image`):\n%s%s"
                           % (NODE_IMAGE, base_image, proc.stdout[-2000:], proc.stderr[-2000:]))
    return NODE_IMAGE


def prepare(lab_dir):
    for role, address in SCENARIO_ADDRESSES.items():
        ensure_pki(os.path.join(lab_dir, role), ips=(address,), dns=("k8s-api",))
    return {"GPUFLEET_K8S_LAB_DIR": os.path.abspath(lab_dir)}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        sys.exit(__doc__)
    build_node_image()
    for key, value in prepare(argv[0]).items():
        print("%s=%s" % (key, value))


if __name__ == "__main__":
    main()
