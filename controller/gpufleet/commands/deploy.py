"""``gpufleet deploy serve|order|wait``: the controller's end of an install (docs/deploy.md).

    gpufleet deploy serve --state-dir /var/lib/gpufleet/deploy --cert ctl.pem --key ctl.key --port 8443
    gpufleet deploy order r42n01 --state-dir /var/lib/gpufleet/deploy --uuid 4c4c4544-... \\
        --image-url https://images.example/2026.09.1/2026.09.1.disk.raw.gz --callback-url https://ctl.example:8443 \\
        --root-device serial=S6EWNX0T123456 --hostname r42n01 --ssh-key-file ~/.ssh/id_ed25519.pub
    gpufleet deploy wait r42n01 --state-dir /var/lib/gpufleet/deploy --timeout 1800

The three share the state directory (``gpufleet.deploy.callbacks``): ``order`` writes the node's
order there, ``serve`` hands it to the installer once and records its callbacks, ``wait`` reads
them. No command prints the callback token.
"""
import json
import os
import sys
import time
import urllib.parse

from gpufleet.commands import whole_number

NAME = "deploy"
HELP = "the controller's end of an install: serve orders and callbacks, write an order, wait for the outcome"
EXIT_TIMEOUT = 3
EXIT_CODES = ((0, "success; wait: the node reported imaged"),
              (1, "error (one line names it and the fix); wait: the node reported failed"),
              (2, "usage error, or an order that does not validate (the field is named)"),
              (EXIT_TIMEOUT, "wait: no outcome within --timeout (the last event is named)"))
EVENTS_PATH = "/v1/nodes/%s/events"   # the route DeployService takes callbacks on (deploy/callbacks.py)
_SEED_OPTIONS = {"hostname": "--hostname", "ssh_key": "--ssh-key-file", "address": "--address",
                 "gateway": "--gateway", "dns": "--dns", "node": "NODE", "uuid": "--uuid"}


def _usage_error(args, message):
    print("gpufleet deploy %s: error: %s" % (args.deploy_command, message), file=sys.stderr)
    return 2


def events_url(base, node):
    """The order's callback URL: ``base`` is the service's URL (scheme://host[:port][/prefix]);
    one that already ends in this node's events path is kept as given."""
    from gpufleet.deploy.errors import DeployError
    parts = urllib.parse.urlsplit(base or "")
    if parts.scheme not in ("https", "http") or not parts.netloc or parts.query or parts.fragment:
        raise DeployError("order", "--callback-url %r is not the deploy service's URL; fix: e.g. "
                          "https://controller.example:8443" % (base,), field="callback_url")
    path = parts.path.rstrip("/")
    if path.endswith(EVENTS_PATH % node):
        return base
    if "/v1/nodes/" in path:
        raise DeployError("order", "--callback-url %s is the events URL of another node; fix: pass the "
                          "service's URL, the command adds %s" % (base, EVENTS_PATH % node), field="callback_url")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path + EVENTS_PATH % node, "", ""))


def root_device_hints(pairs):
    """``KEY=VALUE`` options -> the hints mapping (a key given twice is refused, not overwritten)."""
    from gpufleet.deploy.errors import DeployError
    hints = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key or not value.strip():
            raise DeployError("order", "--root-device %r is not KEY=VALUE; fix: e.g. --root-device "
                              "serial=S6EWNX0T123456" % (pair,), field="root_device")
        if key in hints:
            raise DeployError("order", "--root-device %s is given twice; fix: give each hint once" % key,
                              field="root_device")
        hints[key] = value.strip()
    return hints


def read_ssh_key(path):
    from gpufleet.deploy.errors import DeployError
    try:
        with open(path, encoding="utf-8") as handle:
            lines = [line.strip() for line in handle.read(64 * 1024).splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError) as exc:
        raise DeployError("order", "cannot read --ssh-key-file %s (%s); fix: pass the controller's *.pub "
                          "file" % (path, getattr(exc, "strerror", None) or exc), field="ssh_key")
    if len(lines) != 1:
        raise DeployError("order", "--ssh-key-file %s holds %d lines; fix: pass a file with one OpenSSH "
                          "public key (the seed carries one)" % (path, len(lines)), field="ssh_key")
    return lines[0]


def build_order(args, token):
    """The order for the options, validated by the agent's own parser (DeployError otherwise)."""
    from gpufleet.deploy.errors import DeployError
    from gpufleet.deploy.orders import canonical_uuid, install_order
    from gpufleet.deploy.callbacks import check_node_name

    check_node_name(args.node)
    canonical_uuid(args.uuid)
    if (args.gateway or args.dns) and not args.address:
        raise DeployError("order", "--gateway and --dns go with a static --address; fix: add --address "
                          "CIDR, or drop them for DHCP", field="address")
    if args.address and "/" not in args.address:    # a bare address would become a /32: no route to anything
        raise DeployError("order", "--address %s has no prefix length; fix: e.g. %s/24" % (args.address, args.address),
                          field="address")
    seed = {"hostname": args.hostname, "ssh_key": read_ssh_key(args.ssh_key_file)}
    if args.address:
        seed.update(address=args.address, gateway=args.gateway, dns=list(args.dns))
    return install_order(args.node, args.image_url, root_device_hints(args.root_device), seed,
                         events_url(args.callback_url, args.node), token, image_version=args.image_version,
                         allow_http=args.allow_http)


def cmd_order(args):
    from gpufleet.deploy.callbacks import InstallBook
    from gpufleet.deploy.errors import DeployError
    from gpufleet.deploy.orders import canonical_uuid, new_token

    try:
        order = build_order(args, new_token())
    except DeployError as exc:
        field = _SEED_OPTIONS.get(exc.details.get("field"))
        return _usage_error(args, "%s%s" % (exc.msg, " (option %s)" % field if field else ""))
    book = InstallBook(args.state_dir)
    path = book.expect(args.node, args.uuid, order)
    result = {"node": args.node, "uuid": canonical_uuid(args.uuid), "order": path, "run": book.record(args.node)["run"],
              "callback_url": order["callback"]["url"], "served_as": "orders/%s.json" % canonical_uuid(args.uuid)}
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        print(path)
    return 0


def event_line(event):
    """One progress line: seconds since the installer started, state, step and what it did."""
    extra = ""
    if event.get("bytes") is not None and event.get("total"):
        extra = " %d/%d bytes" % (event["bytes"], event["total"])
    else:
        extra = "".join(" %s=%s" % (key, event[key]) for key in ("disk", "hostname", "partition", "image")
                        if event.get(key) is not None)
    seconds = event.get("seconds")
    return "%9s  %-8s %s%s" % ("+%ss" % seconds if seconds is not None else "-", event["state"], event["step"], extra)


def outcome_line(event):
    if event["state"] == "imaged":
        return "imaged: version %s on %s (serial %s), sha256 %s" % (
            event.get("version"), event.get("disk"), event.get("serial") or "-", event.get("sha256"))
    return "failed at %s: %s" % (event["step"], event.get("reason") or "(no reason given)")


def wait_for(book, node, timeout, out=None, clock=time.monotonic, sleep=time.sleep, poll=0.5):
    """Follow ``node``'s current install until its outcome or ``timeout`` seconds.

    -> (exit code, result dict). Prints each event as it arrives on ``out`` (None: print nothing)."""
    from gpufleet.deploy.callbacks import FINAL_STATES
    from gpufleet.deploy.errors import DeployError
    record = book.record(node)
    if record is None:
        raise DeployError("wait", "no order for %s in %s; fix: run `gpufleet deploy order %s ...` first"
                          % (node, book.root, node), field="node")
    deadline, shown = clock() + timeout, 0
    result = {"node": node, "run": record["run"], "outcome": None, "last_event": None}
    while True:
        current = book.record(node)
        if not current or current["run"] != record["run"]:
            result["outcome"] = "replaced"
            if out:
                print("a new order for %s replaced the install being waited for; wait again" % node, file=out)
            return 1, result
        events = book.events(node)
        for event in events[shown:]:
            result["last_event"] = event
            if out:
                print(event_line(event), file=out, flush=True)
            if event["state"] in FINAL_STATES:
                result["outcome"] = event["state"]
                if out:
                    print(outcome_line(event), file=out, flush=True)
                return (0 if event["state"] == "imaged" else 1), result
        shown = len(events)
        if clock() >= deadline:
            result["outcome"] = "timeout"
            last = result["last_event"]
            if out:
                print("timed out after %ss waiting for %s; %s" % (
                    timeout, node, "last event: %s" % event_line(last).strip() if last else
                    "no event yet (the order has %sbeen fetched)" % ("" if book.served(node) else "not ")),
                    file=out, flush=True)
            return EXIT_TIMEOUT, result
        sleep(poll)


def cmd_wait(args):
    from gpufleet.deploy.callbacks import InstallBook
    if args.timeout <= 0:
        return _usage_error(args, "--timeout must be more than 0 seconds, got %s" % args.timeout)
    book = InstallBook(args.state_dir)
    code, result = wait_for(book, args.node, args.timeout, out=None if args.json else sys.stdout)
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    return code


def cmd_serve(args):
    import signal
    import threading

    from gpufleet.deploy.callbacks import DeployService, InstallBook
    from gpufleet.deploy.errors import DeployError

    for option, path in (("--cert", args.cert), ("--key", args.key)):
        if not os.path.isfile(path):
            raise DeployError("serve", "%s %s is not a file; fix: pass the service's PEM %s" % (
                option, path, "certificate" if option == "--cert" else "private key"), field=option[2:])
    book = InstallBook(args.state_dir)
    stop = threading.Event()
    service = DeployService(book, args.address, args.port, args.cert, args.key)
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    try:
        service.server.log("serving https://%s:%d (GET /orders/<uuid>.json, POST %s) from %s" % (
            args.address, service.port, EVENTS_PATH % "<node>", book.root))
        while not stop.wait(1):
            pass
        service.server.log("SIGTERM: stopping")
    finally:
        service.stop()
        signal.signal(signal.SIGTERM, previous)
    return 0


def register(parser):
    sub = parser.add_subparsers(dest="deploy_command", metavar="DEPLOY_COMMAND")
    state = dict(required=True, metavar="DIR",
                 help="the deploy state directory (mode 0700; created when missing) shared by serve, order and wait")

    serve = sub.add_parser("serve", help="the HTTPS service: orders once, the installers' callbacks",
                           description="Serve GET /orders/<uuid>.json (each order once) and POST "
                           "/v1/nodes/<node>/events (with the node's token) over HTTPS until SIGTERM. "
                           "One line per request on stderr; no token is logged.")
    serve.add_argument("--state-dir", **state)
    serve.add_argument("--cert", required=True, help="the service's certificate (PEM), chaining to the "
                       "CA the installer was built with")
    serve.add_argument("--key", required=True, help="its private key (PEM)")
    serve.add_argument("--address", default="0.0.0.0", help="address to listen on (default: 0.0.0.0)")
    serve.add_argument("--port", type=whole_number(0, 65535, "a port number (0-65535)"), default=8443,
                       help="port (default: 8443; 0 picks a free one)")
    serve.set_defaults(func=cmd_serve)

    order = sub.add_parser("order", help="write a node's install order (a fresh one-time token; never printed)",
                           description="Validate the node's install order with the deploy agent's own parser "
                           "and write it as <state-dir>/orders/<uuid>.json (mode 0600), replacing the node's "
                           "earlier order and token. Prints the file's path.")
    order.add_argument("node", metavar="NODE", help="the node's name (as the callbacks name it)")
    order.add_argument("--state-dir", **state)
    order.add_argument("--uuid", required=True, help="the machine's SMBIOS UUID (Redfish Systems/<id> UUID)")
    order.add_argument("--image-url", required=True, help="URL of the signed whole-disk image")
    order.add_argument("--image-version", help="the version the image's signed manifest must carry")
    order.add_argument("--callback-url", required=True, help="the deploy service's URL, e.g. "
                       "https://controller.example:8443 (the order gets <URL>%s)" % (EVENTS_PATH % "<NODE>"))
    order.add_argument("--root-device", action="append", default=[], metavar="KEY=VALUE", required=True,
                       help="a root-device hint (serial, wwn, by_path, model, size, ...); repeatable")
    order.add_argument("--hostname", required=True, help="the host name the first boot sets")
    order.add_argument("--ssh-key-file", required=True, help="the controller's SSH public key file (one key)")
    order.add_argument("--address", help="static management address, CIDR (default: DHCP)")
    order.add_argument("--gateway", help="default gateway (with --address)")
    order.add_argument("--dns", action="append", default=[], help="DNS server (with --address); repeatable")
    order.add_argument("--allow-http", action="store_true",
                       help="let the installer use plain http for the image and callback (a lab only)")
    order.add_argument("--json", action="store_true", help="print the result as JSON")
    order.set_defaults(func=cmd_order)

    wait = sub.add_parser("wait", help="follow a node's install until imaged, failed or --timeout",
                          description="Print the node's install events as they arrive; exit 0 on imaged, "
                          "1 on failed, %d on timeout." % EXIT_TIMEOUT)
    wait.add_argument("node", metavar="NODE")
    wait.add_argument("--state-dir", **state)
    wait.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait (default: 3600)")
    wait.add_argument("--json", action="store_true", help="print only the result, as JSON, at the end")
    wait.set_defaults(func=cmd_wait)
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])
