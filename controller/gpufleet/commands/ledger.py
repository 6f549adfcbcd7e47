"""``gpufleet ledger migrate|copy|check``: administer the lifecycle ledger (SQLite or PostgreSQL).

A ledger is a file path (SQLite) or a ``postgresql://`` URL. ``check`` and the source of
``copy`` only read (an SQLite file needs no write access); a location holding no ledger is an
error naming it and the fix, never "0 problem(s)". Keep the password out of the
URL: use $GPUFLEET_LEDGER_PASSWORD, $PGPASSWORD or ~/.pgpass (a password in the URL is
masked in every line printed).
"""
import json
import os

NAME = "ledger"
HELP = "lifecycle ledger: migrate the schema, copy SQLite -> PostgreSQL, check consistency"


def _admin():
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import ledger_admin
    return ledger_admin


def _password():
    return os.environ.get("GPUFLEET_LEDGER_PASSWORD") or None


def _location(value):
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.errors import LedgerError
    location = value or os.environ.get("GPUFLEET_LEDGER")
    if not location:
        raise LedgerError("No ledger given. Pass the ledger path or postgresql:// URL, or set $GPUFLEET_LEDGER.")
    return location


def run_migrate(args):
    result = _admin().migrate(_location(args.ledger), password=_password())
    if args.json:
        print(json.dumps(result, sort_keys=True))
    elif result["changed"]:
        print("%s: schema migrated from version %s to %s" % (result["ledger"], result["before"], result["after"]))
    else:
        print("%s: schema already at version %s" % (result["ledger"], result["after"]))
    return 0


def run_copy(args):
    # The destination's password comes from the environment; the source is usually a file.
    result = _admin().copy(args.source, args.destination, force=args.force, dst_password=_password())
    if args.json:
        print(json.dumps(result, sort_keys=True))
        return 0
    print("copied %s -> %s" % (result["source"], result["destination"]))
    for table, summary in sorted(result["tables"].items()):
        print("  %-16s %8d rows  sha256 %s  (source = destination)" % (table, summary["rows"], summary["sha256"][:16]))
    return 0


def run_check(args):
    # Read-only: no write access needed, nothing created, migrated or written.
    book = _admin().open_existing(_location(args.ledger), password=_password())
    try:
        problems = _admin().check(book)
    finally:
        book.close()
    if args.json:
        print(json.dumps({"ledger": book.path, "problems": problems}, sort_keys=True))
    else:
        for problem in problems:
            print("%s: %s" % (problem["object"], problem["problem"]))
        print("%s: %d problem(s)" % (book.path, len(problems)))
    return 1 if problems else 0


def register(parser):
    sub = parser.add_subparsers(dest="ledger_command", metavar="LEDGER_COMMAND")
    migrate = sub.add_parser("migrate", help="bring a ledger to this collection's schema version")
    migrate.add_argument("ledger", nargs="?", help="ledger path or postgresql:// URL (default: $GPUFLEET_LEDGER)")
    migrate.set_defaults(func=run_migrate)
    copy = sub.add_parser("copy", help="copy every record into an empty ledger; counts and checksums compared")
    copy.add_argument("source", help="source ledger (path or URL); never written")
    copy.add_argument("destination", help="destination ledger (path or URL); must be empty")
    copy.add_argument("--force", action="store_true", help="replace the destination's records")
    copy.set_defaults(func=run_copy)
    check = sub.add_parser("check", help="report gaps in sequences, state mismatches and dangling gang members")
    check.add_argument("ledger", nargs="?", help="ledger path or postgresql:// URL (default: $GPUFLEET_LEDGER)")
    check.set_defaults(func=run_check)
    for each in (migrate, copy, check):
        each.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])
