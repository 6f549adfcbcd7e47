"""``gpufleet lab``: start, stop, inspect and fault-inject the lab (digital twin).

The lab package adds this subcommand to ``gpufleet`` through the ``gpufleet.commands``
entry point (lab/pyproject.toml); the controller package never imports the lab.
"""
import json
import os
import sys

NAME = "lab"
HELP = "the lab (digital twin): up, publish, down, status, fault, clear-faults, console"
EXIT_BMC_DOWN = 3   # `lab status`: a rack's BMC emulator is down
EXIT_CODES = ((0, "success (status: every rack's BMC emulator is up)"), (1, "error"), (2, "usage error"),
              (EXIT_BMC_DOWN, "status: a rack's BMC emulator is down"))


def _twin():
    from lab.twin import lab
    return lab


def _config(args):
    from lab.twin import config
    return config.load(args.config, racks=getattr(args, "racks", None),
                       nodes_per_rack=getattr(args, "nodes_per_rack", None))


def cmd_up(args):
    lab = _twin()
    cfg = _config(args)
    vars_path = lab.up(cfg, bmc_only=args.bmc_only)
    print("lab up: %d racks x %d nodes; playbook vars: %s" % (cfg.racks, cfg.nodes_per_rack, vars_path))
    return 0


def cmd_publish(args):
    lab = _twin()
    lab.publish_image(_config(args), args.version)
    return 0


def cmd_down(args):
    lab = _twin()
    lab.down(_config(args), purge=args.purge)
    return 0


def cmd_status(args):
    lab = _twin()
    report = lab.status(_config(args))
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        print("BMC racks: " + ", ".join("%s=%s" % (k, "up" if v else "DOWN") for k, v in sorted(report["bmc_racks"].items())))
        print("node manager: %s" % ("up" if report["manager"] else "DOWN"))
        print("%-12s %-9s %-10s %-24s %s" % ("node", "container", "disk", "slurm", "last error"))
        for name, node in sorted(report["nodes"].items()):
            slurm = node["slurm"] or {}
            print("%-12s %-9s %-10s %-24s %s" % (name, "running" if node["container"] else "-", node["disk"] or "-",
                                                 (slurm.get("state", "-") + " " + slurm.get("reason", ""))[:24],
                                                 node["last_error"] or ""))
    up = all(report["bmc_racks"].values())
    return 0 if up else EXIT_BMC_DOWN


def _params(pairs):
    out = {}
    for pair in pairs or []:
        key, _sep, value = pair.partition("=")
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def cmd_fault(args):
    lab = _twin()
    model = lab.inject_fault(_config(args), args.node, args.type, **_params(args.param))
    print("%s faults: %s" % (args.node, json.dumps(model["faults"])))
    return 0


def cmd_clear(args):
    lab = _twin()
    lab.clear_faults(_config(args), args.node)
    return 0


def cmd_console(args):
    cfg = _config(args)
    cfg.node(args.node)
    path = cfg.path("nodes", args.node + ".console")
    if os.path.exists(path):
        with open(path) as handle:
            sys.stdout.write(handle.read())
    return 0


def register(parser):
    parser.add_argument("--config", help="lab config YAML (default lab/config/default.yml)")
    sub = parser.add_subparsers(dest="lab_command", metavar="ACTION")
    up = sub.add_parser("up", help="start BMC emulators, node manager and Slurm controller")
    up.add_argument("--racks", type=int, help="override the number of racks")
    up.add_argument("--nodes-per-rack", type=int, help="override nodes per rack")
    up.add_argument("--bmc-only", action="store_true", help="only the BMC emulators (scales to 1,000 systems)")
    up.set_defaults(func=cmd_up)
    publish = sub.add_parser("publish", help="verify a built image and serve it to the lab's virtual media")
    publish.add_argument("--version", default="lab", help="image version under build/images (default lab)")
    publish.set_defaults(func=cmd_publish)
    down = sub.add_parser("down", help="stop and remove everything `up` started")
    down.add_argument("--purge", action="store_true", help="also delete node disks and lab state (ledger, reports)")
    down.set_defaults(func=cmd_down)
    st = sub.add_parser("status", help="what runs: racks, manager, nodes, Slurm states")
    st.add_argument("--json", action="store_true", help="print the status as JSON")
    st.set_defaults(func=cmd_status)
    fault = sub.add_parser("fault", help="inject a hardware fault into a node's model")
    fault.add_argument("node")
    fault.add_argument("type", help="missing_gpu, faulty_gpu, xid, degraded_nvlink, slow_hca, ecc, thermal_slowdown, "
                                    "ecc_under_load, fabric_down, bmc_critical")
    fault.add_argument("--param", action="append",
                       help="fault parameter key=value (e.g. gpu=3; a GPU's fault without gpu= hits GPU 0)")
    fault.set_defaults(func=cmd_fault)
    clear = sub.add_parser("clear-faults", help="remove injected faults (one node or all)")
    clear.add_argument("node", nargs="?")
    clear.set_defaults(func=cmd_clear)
    console = sub.add_parser("console", help="print a node's console log (power, installer, boot)")
    console.add_argument("node")
    console.set_defaults(func=cmd_console)
