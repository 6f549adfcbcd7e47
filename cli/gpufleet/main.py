"""``gpufleet`` entry point: every module in ``gpufleet.commands`` adds one subcommand.

A command module defines ``NAME``, ``HELP`` and ``register(parser)``; the parser's
``func`` default receives the parsed args and returns the exit code. Errors derived
from GpufleetError print one line and exit 1; nothing else is swallowed.
"""
import argparse
import importlib
import pkgutil
import sys

from gpufleet import commands
from gpufleet.collection import ensure_importable


def build_parser():
    parser = argparse.ArgumentParser(prog="gpufleet", description="Controller command line for gpufleet.baremetal.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module("gpufleet.commands." + info.name)
        module.register(sub.add_parser(module.NAME, help=module.HELP, description=module.HELP))
    return parser


def main(argv=None):
    ensure_importable()
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
