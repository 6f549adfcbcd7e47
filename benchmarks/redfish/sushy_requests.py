#!/usr/bin/env python3
"""Count the HTTP requests sushy makes for the benchmark's job on one node, versus ours.

    .venv/bin/python benchmarks/redfish/sushy_requests.py --config lab/bmc/demo/rack.yml

Starts nothing: run it against racks that are up (``make lab-bmc-start``). Uses the lab's
request counter (``/lab/stats``). The job: insert virtual media, one-time PXE boot, power on.
"""
import argparse
import os
import sys

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

from lab.bmc import config as labconfig
from lab.bmc import labctl
import gpufleet  # noqa: F401  (installs the collection loader for the module_utils import below)


def counter(rack, ca):
    url = "https://%s:%s/lab/stats" % (rack["address"], rack["port"])
    return requests.get(url, verify=ca, timeout=10).json()["requests"]


def with_sushy(node, cfg, ca, image):
    import sushy
    conn = sushy.Sushy("https://%s/redfish/v1" % node["baseuri"], username=cfg["username"],
                       password=cfg["password"], verify=ca)
    system = conn.get_system("/redfish/v1/Systems/" + node["system_id"])
    media = system.virtual_media.get_member(system.virtual_media.members_identities[0])
    media.insert_media(image, inserted=True, write_protected=True)
    system.set_system_boot_options(sushy.BootSource.PXE, enabled=sushy.BootSourceOverrideEnabled.ONCE)
    system.reset_system(sushy.ResetType.ON)
    conn.__del__()  # what collecting the object does: sushy logs out its session


def with_ours(node, cfg, ca, image):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish import (
        boot, client, power, virtual_media)
    sent = 0
    for operation in (lambda c: virtual_media.insert_media(c, node["system_id"], image),
                      lambda c: boot.set_boot(c, node["system_id"], "pxe", "once"),
                      lambda c: power.set_power(c, node["system_id"], "on", wait=False)):
        with client.RedfishClient(node["baseuri"], cfg["username"], cfg["password"],
                                  ca_path=ca, node=node["name"]) as rf:
            operation(rf)
        sent += rf.requests_sent + 1  # + the logout, sent outside the counter
    print("gpufleet client counted %d requests itself" % sent)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--image", default="http://127.0.10.250:9/boot.iso")
    args = parser.parse_args(argv)
    cfg = labconfig.load(args.config)
    rack = cfg["racks"][0]
    ca = os.path.join(cfg["state_dir"], "pki", "ca.pem")
    nodes = labctl.nodes(cfg, [rack])
    for label, job, node in (("sushy", with_sushy, nodes[0]), ("gpufleet", with_ours, nodes[1])):
        before = counter(rack, ca)
        job(node, cfg, ca, args.image)
        print("%-9s %d requests for insert media + one-time PXE + power on"
              % (label, counter(rack, ca) - before))
    return 0


if __name__ == "__main__":
    sys.exit(main())
