"""``gpufleet`` entry point: every module in ``gpufleet.commands`` adds one subcommand.

A command module defines ``NAME``, ``HELP`` and ``register(parser)``; the parser's
``func`` default receives the parsed args and returns the exit code. Packages on top of
the controller (the lab) add subcommands through the ``gpufleet.commands`` entry-point
group, so the controller never imports them. Errors derived from GpufleetError print one
line and exit 1; nothing else is swallowed.
"""
import argparse
import importlib
import pkgutil
import sys
from importlib.metadata import entry_points

from gpufleet import collection, commands

PLUGIN_GROUP = "gpufleet.commands"


def _command_modules():
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        yield importlib.import_module("gpufleet.commands." + info.name)
    for entry in sorted(entry_points(group=PLUGIN_GROUP), key=lambda e: e.name):
        yield entry.load()


def build_parser():
    parser = argparse.ArgumentParser(prog="gpufleet", description="Controller command line for gpufleet.baremetal.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules():
        module.register(sub.add_parser(module.NAME, help=module.HELP, description=module.HELP))
    return parser


def main(argv=None):
    try:
        collection.root()
    except collection.CollectionNotFound as exc:
        print("gpufleet: error: %s" % exc, file=sys.stderr)
        return 1
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError

    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except GpufleetError as exc:
        print("gpufleet %s: error: %s" % (args.command, exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("gpufleet %s: interrupted" % args.command, file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
