#!/usr/bin/env python3
"""Serve one rack of emulated BMCs: ``python lab/bmc/serve.py --config X --rack r1``.

sushy-tools' emulator (fake driver) plus the lab layer (layer.py), HTTPS with the lab CA,
basic auth from an htpasswd file and sessions. ``labctl.py start`` runs one per rack.
"""
import argparse
import logging
import os
import shutil
import signal
import ssl
import sys
import tempfile


from lab.bmc import config as labconfig
from lab.bmc import layer
from lab.bmc import pki


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="lab BMC YAML config")
    parser.add_argument("--rack", required=True, help="rack name from the config")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args(argv)
    cfg = labconfig.load(args.config)
    rack = labconfig.rack_of(cfg, args.rack)
    nodes = labconfig.nodes_of(rack)
    auth_file = os.path.join(cfg["state_dir"], "htpasswd")
    if not os.path.exists(auth_file):
        pki.write_htpasswd(auth_file, cfg["username"], cfg["password"])
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    state_dir = tempfile.mkdtemp(prefix="gpufleet-redfish-%s-" % rack["name"], dir=shm)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        return _serve(cfg, rack, nodes, auth_file, state_dir, args.verbose)
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)


def _serve(cfg, rack, nodes, auth_file, state_dir, verbose):
    app, _state = layer.build_app(cfg, rack, nodes, auth_file, state_dir)
    context = None
    if cfg.get("tls", True):
        paths = pki.ensure_pki(os.path.join(cfg["state_dir"], "pki"),
                               [r["address"] for r in cfg["racks"]] + ["127.0.0.1"])
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(paths["server.pem"], paths["server.key"])
    if not verbose:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
    app.logger.setLevel(logging.WARNING)
    from werkzeug.serving import run_simple
    run_simple(rack["address"], int(rack["port"]), app, threaded=True, ssl_context=context,
               use_reloader=False, use_debugger=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
