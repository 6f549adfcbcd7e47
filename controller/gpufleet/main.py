"""``gpufleet`` entry point: every module in ``gpufleet.commands`` adds one subcommand.

A command module defines ``NAME``, ``HELP`` and ``register(parser)``; the parser's
``func`` default receives the parsed args and returns the exit code. Packages on top of
the controller (the lab) add subcommands through the ``gpufleet.commands`` entry-point
group, so the controller never imports them. Errors derived from GpufleetError print one
line and exit 1; nothing else is swallowed.

Command modules import the collection only when their command runs, so ``--help`` and
``--version`` work without it; a command run without it is one error line (exit 1).
A module whose command exits with codes beyond 0/1/2 lists them all in ``EXIT_CODES``
(``((code, meaning), ...)``), the one place they are defined; its help epilog is made from it.
"""
import argparse
import importlib
import os
import pkgutil
import sys
from importlib.metadata import PackageNotFoundError, entry_points, version

from gpufleet import collection, commands

PLUGIN_GROUP = "gpufleet.commands"
DISTRIBUTION = "gpufleet"
EXIT_INTERRUPTED = 130
EXIT_CODES = ((0, "success"), (1, "error: one line on stderr names it and the fix"),
              (2, "usage error (a bad or missing argument)"), (EXIT_INTERRUPTED, "interrupted (Ctrl-C)"))


def exit_codes_epilog(codes):
    """The "exit codes:" help section, one line per (code, meaning)."""
    return "exit codes:\n" + "\n".join("  %-4d %s" % (code, meaning) for code, meaning in codes)


def collection_version():
    """The collection's version from its galaxy.yml (a checkout) or MANIFEST.json (an
    installed collection); None when the collection or the file is not found."""
    import json

    import yaml

    try:
        root = collection.root()
    except collection.CollectionNotFound:
        return None
    for name, read in (("galaxy.yml", lambda h: yaml.safe_load(h)),
                       ("MANIFEST.json", lambda h: json.load(h).get("collection_info"))):
        try:
            with open(os.path.join(root, name)) as handle:
                data = read(handle)
        except (OSError, ValueError, yaml.YAMLError):
            continue
        if isinstance(data, dict) and data.get("version"):
            return str(data["version"])
    return None


def version_text():
    try:
        package = version(DISTRIBUTION)
    except PackageNotFoundError:
        package = "unknown (the %s package is not installed)" % DISTRIBUTION
    found = collection_version()
    return "gpufleet %s; collection %s %s" % (
        package, collection.COLLECTION, found or "not found (set ANSIBLE_COLLECTIONS_PATH or run `make collection`)")


class _VersionAction(argparse.Action):
    """--version: looked up only when asked (finding the collection costs a moment)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit(0)


def _command_modules():
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        yield importlib.import_module("gpufleet.commands." + info.name)
    for entry in sorted(entry_points(group=PLUGIN_GROUP), key=lambda e: e.name):
        yield entry.load()


def build_parser():
    parser = argparse.ArgumentParser(prog="gpufleet", description="Controller command line for gpufleet.baremetal.",
                                     epilog=exit_codes_epilog(EXIT_CODES),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_VersionAction, help="print the package and collection versions and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules():
        codes = getattr(module, "EXIT_CODES", None)
        module.register(sub.add_parser(module.NAME, help=module.HELP, description=module.HELP,
                                       epilog=exit_codes_epilog(codes) if codes else None,
                                       formatter_class=argparse.RawDescriptionHelpFormatter))
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        collection.root()       # every command runs collection code; help above does not
    except collection.CollectionNotFound as exc:
        print("gpufleet %s: error: %s" % (args.command, exc), file=sys.stderr)
        return 1
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError

    try:
        return int(args.func(args) or 0)
    except GpufleetError as exc:
        print("gpufleet %s: error: %s" % (args.command, exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("gpufleet %s: interrupted" % args.command, file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
