"""``gpufleet attest``: the controller's half of TPM attestation, one step per command (docs/attestation.md).

A playbook runs tpm2-tools on the node and these on the controller, passing files between them:

    gpufleet attest enroll-challenge NODE --ek-cert ek.der --ek-ca-bundle vendors.pem --ak-public ak.pub \\
        --credential-out cred.in --state-dir DIR --ledger L       # node: tpm2_activatecredential -i cred.in
    gpufleet attest enroll-finish NODE --secret secret.out --state-dir DIR --ledger L
    gpufleet attest nonce NODE --state-dir DIR                    # node: tpm2_quote -q NONCE ...
    gpufleet attest verify NODE --quote-message quote.msg --quote-signature quote.sig --quote-pcrs quote.pcrs \\
        --references refs.json --image-key image.pub --image-version V --firmware-version F --state-dir DIR --ledger L
    gpufleet attest show [NODE] [--history] --ledger L
    gpufleet attest references --pcrread pcrs.txt --image-version V --firmware-version F --key image.key --out refs.json

Enrollments are ledger records; the state directory holds the open enrollment challenges (their
secrets) and the nonce book, each 0600. No command prints a secret.
"""
import getpass
import json
import os
import sys

from gpufleet.commands import whole_number

NAME = "attest"
HELP = "TPM attestation, the controller's half: enroll a node's AK, issue nonces, verify quotes, show enrollments"
EXIT_REFUSED = 3
EXIT_REENROLL = 4
EXIT_CODES = ((0, "success; verify: the quote passed; enroll-challenge: a credential was written, or the node is "
                  "already enrolled with this EK and AK (nothing to do)"),
              (1, "error: one line names it and the fix (the ledger, the reference file, a missing tool)"),
              (2, "usage error, or an input file that cannot be read (the option is named)"),
              (EXIT_REFUSED, "refused: the node is not trusted; the line names the reason (EK chain, activation, "
                             "nonce, signature, PCR, event log)"),
              (EXIT_REENROLL, "refused until a person re-enrolls the node: its EK certificate, or the AK it "
                              "presents, differs from the enrolled one (enroll-challenge --reenroll --reason)"))
_REENROLL_REASONS = ("ek_changed", "ak_changed")
NONCE_BOOK = "nonces.json"
CHALLENGES = "challenges"
_POSITIVE = whole_number(1, float("inf"), "a positive number of seconds")


class BadInput(Exception):
    """An input file or option that cannot be used; exit 2 with the option named."""


def _say(args, kind, message):
    print("gpufleet attest %s: %s: %s" % (args.attest_command, kind, " ".join(str(message).split())),
          file=sys.stderr)


def _read(path, option, what, text=False):
    if path == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            raise BadInput("cannot read %s %s (%s); fix: pass %s" % (option, path, exc.strerror or exc, what))
    if not data:
        raise BadInput("%s %s is empty; fix: pass %s" % (option, path, what))
    if text:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise BadInput("%s %s is not UTF-8 text; fix: pass %s" % (option, path, what))
    return data


def _state(args, *parts):
    return os.path.join(args.state_dir, *parts)


def _open_ledger(args, read_only=False):
    from gpufleet.commands.ledger import _location, _password
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import ledger_admin
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
    location = _location(args.ledger)
    if read_only:
        return ledger_admin.open_existing(location, password=_password())
    return Ledger(location, password=_password())


def _emit(args, result, line):
    print(json.dumps(result, indent=2, sort_keys=True) if args.json else line)


def cmd_enroll_challenge(args):
    from gpufleet.attest import enroll
    from gpufleet.attest.errors import EnrollmentError
    from gpufleet.deploy.orders import write_private

    ek_cert = _read(args.ek_cert, "--ek-cert", "the EK certificate read from the node's TPM (DER or PEM)")
    bundle = _read(args.ek_ca_bundle, "--ek-ca-bundle", "the TPM vendors' CA certificates, PEM")
    ak_public = _read(args.ak_public, "--ak-public", "the AK's TPM2B_PUBLIC (tpm2_readpublic -f tss -o FILE)")
    if args.reason and not args.reenroll:
        raise BadInput("--reason goes with --reenroll; fix: add --reenroll, or drop --reason")
    book = _open_ledger(args)
    try:
        pending = enroll.challenge(enroll.EnrollmentStore(book), args.node, ek_cert, bundle, ak_public,
                                   reenroll=args.reenroll, reason=args.reason)
    finally:
        book.close()
    result = {"node": args.node, "decision": pending["decision"], "ek_fingerprint": pending["ek"]["fingerprint"],
              "ek_chain": pending["ek"]["chain"], "ak_name": pending["ak_name"], "credential": None}
    if pending["decision"] == enroll.KEEP:
        record = pending["record"]
        if record["ak_name"] != pending["ak_name"]:
            raise EnrollmentError(
                "Node %s presents AK %s, but its enrolled AK (same EK, enrolled %s) is %s. Refusing it: quotes must "
                "use the enrolled AK (keep it at a persistent handle). If the node lost it, a person re-enrolls "
                "the node: --reenroll --reason '<what was checked>'." % (
                    args.node, pending["ak_name"], record["enrolled_at"], record["ak_name"]),
                node=args.node, reason="ak_changed")
        result["enrolled"] = record
        _emit(args, result, "%s: already enrolled with this EK and AK (enrolled %s by %s); nothing to do"
              % (args.node, record["enrolled_at"], record["enrolled_by"]))
        return 0
    enroll.ChallengeBook(_state(args, CHALLENGES), ttl_s=args.ttl).put(args.node, pending)
    write_private(os.path.abspath(args.credential_out), pending["credential"])
    result["credential"] = args.credential_out
    _emit(args, result, "%s: %s challenge written to %s (EK certificate sha256 %s, chain %s); run "
          "tpm2_activatecredential on the node within %d s, then enroll-finish" % (
              args.node, pending["decision"], args.credential_out, pending["ek"]["fingerprint"],
              " <- ".join(pending["ek"]["chain"]), args.ttl))
    return 0


def cmd_enroll_finish(args):
    from gpufleet.attest import enroll

    secret = _read(args.secret, "--secret", "the file tpm2_activatecredential -o wrote on the node")
    who = args.by or os.environ.get("SUDO_USER") or getpass.getuser()
    pending = enroll.ChallengeBook(_state(args, CHALLENGES)).take(args.node)  # once, even if refused below
    book = _open_ledger(args)
    try:
        record = enroll.finish(enroll.EnrollmentStore(book), args.node, pending, secret, who)
    finally:
        book.close()
    _emit(args, {"node": args.node, "decision": pending["decision"], "enrolled": record},
          "%s: %s (AK %s, EK certificate sha256 %s, by %s: %s)" % (
              args.node, "re-enrolled" if pending["decision"] == enroll.REENROLL else "enrolled", record["ak_name"],
              record["ek_fingerprint"], record["enrolled_by"], record["reason"]))
    return 0


def cmd_nonce(args):
    from gpufleet.attest.enroll import check_node
    from gpufleet.attest.quote import NonceBook

    check_node(args.node)
    with NonceBook.locked(_state(args, NONCE_BOOK)) as book:
        nonce = book.issue(args.node)
    _emit(args, {"node": args.node, "nonce": nonce}, nonce)
    return 0


def cmd_verify(args):
    from gpufleet.attest import enroll, eventlog, quote, references

    message = _read(args.quote_message, "--quote-message", "the file tpm2_quote -m wrote")
    signature = _read(args.quote_signature, "--quote-signature", "the file tpm2_quote -s wrote")
    pcr_values = _read(args.quote_pcrs, "--quote-pcrs", "the file tpm2_quote -o ... -F values wrote")
    _read(args.references, "--references", "the signed PCR reference file of the node's image")
    image_key = _read(args.image_key, "--image-key", "the image public key (PEM) the references are signed with")
    log = reference_log = None
    if args.reference_event_log and not args.event_log:
        raise BadInput("--reference-event-log goes with --event-log; fix: add the node's --event-log")
    if args.event_log:
        log = _read(args.event_log, "--event-log", "what tpm2_eventlog printed on the node", text=True)
    if args.reference_event_log:
        reference_log = _read(args.reference_event_log, "--reference-event-log",
                              "what tpm2_eventlog printed on a known-good node of this image", text=True)
    expected = references.load_references(args.references, image_key, args.image_version, args.firmware_version,
                                          key_where=args.image_key)
    book = _open_ledger(args, read_only=True)
    try:
        store = enroll.EnrollmentStore(book)
        with quote.NonceBook.locked(_state(args, NONCE_BOOK), ttl_s=args.nonce_ttl) as nonces:
            result = quote.verify_join(store, nonces, args.node, message, signature, pcr_values, expected)
    finally:
        book.close()
    if log is not None:
        events = eventlog.parse_event_log(log, args.event_log)
        reference_events = (eventlog.parse_event_log(reference_log, args.reference_event_log)
                            if reference_log is not None else None)
        eventlog.check_event_log(events, result["pcrs"], reference_events)
    checked = sorted("%s:%s" % (bank, index) for bank, values in expected.items() for index in values)
    _emit(args, {"node": args.node, "result": "pass", "pcrs": result["pcrs"], "checked": checked,
                 "nonce": result["attest"]["extra_data"], "event_log": log is not None},
          "%s: attestation passed (%s equal the references of image %s, firmware %s%s)" % (
              args.node, ", ".join(checked), args.image_version, args.firmware_version,
              "; the event log reproduces the quote" if log is not None else ""))
    return 0


def cmd_references(args):
    from gpufleet.attest import references
    from gpufleet.attest.errors import PcrReferenceError
    from gpufleet.commands.image import _passphrase
    from gpufleet.deploy.orders import write_private
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.image import signing
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import SignatureError

    text = _read(args.pcrread, "--pcrread", "what tpm2_pcrread printed on a known-good node", text=True)
    pem = _read(args.key, "--key", "the image signing key (PEM)")
    try:
        pcrs = references.parse_pcrread(text, args.pcrread)
    except PcrReferenceError as exc:
        raise BadInput(exc.msg)
    try:
        key = signing.load_private_key(pem, args.key, _passphrase())
    except SignatureError as exc:
        raise BadInput(exc.msg)
    entries = []
    if os.path.exists(args.out):  # add to the file: it must verify with this key first
        entries = references.read_verified(args.out, signing.public_pem(key.public_key()),
                                           key_where=args.key)["references"]
    entry = {"image_version": args.image_version, "firmware_version": args.firmware_version, "pcrs": pcrs}
    data, signature = references.build_references(references.merge_entry(entries, entry, args.replace), key)
    write_private(os.path.abspath(args.out), data)
    write_private(os.path.abspath(args.out) + ".sig", signature)
    checked = sorted("%s:%s" % (bank, index) for bank, values in pcrs.items() for index in values)
    _emit(args, {"references": args.out, "image_version": args.image_version,
                 "firmware_version": args.firmware_version, "pcrs": pcrs, "entries": len(entries) + 1},
          "%s: references of image %s, firmware %s (%s) signed with key %s; signature %s.sig" % (
              args.out, args.image_version, args.firmware_version, ", ".join(checked),
              signing.key_id(key.public_key()), args.out))
    return 0


def cmd_show(args):
    from gpufleet.attest import enroll

    book = _open_ledger(args, read_only=True)
    try:
        store = enroll.EnrollmentStore(book)
        if args.node and not args.history:
            records = [r for r in [store.get(args.node)] if r]
        else:
            records = [r for r in store.history(args.node) if args.history or r["replaced_at"] is None]
    finally:
        book.close()
    if args.json:
        print(json.dumps(records, indent=2, sort_keys=True))
    else:
        for r in records:
            print("%s  %s  ek %s  ak %s  by %s: %s%s" % (
                r["node"], r["enrolled_at"], r["ek_fingerprint"][:16], r["ak_name"][:20], r["enrolled_by"],
                r["reason"], "  (replaced %s by #%s)" % (r["replaced_at"], r["replaced_by"]) if r["replaced_at"]
                else "  (current)"))
        if not records:
            print("no enrollment%s" % (" of %s" % args.node if args.node else ""))
    return 0 if records or not args.node else EXIT_REFUSED


def run(args):
    """Run the subcommand; map refusals and bad input to their exit codes and one line."""
    from gpufleet.attest.errors import AttestError, PcrReferenceError

    try:
        return args.handler(args)
    except BadInput as exc:
        _say(args, "error", exc)
        return 2
    except PcrReferenceError:
        raise   # the site's reference file, not the node: exit 1 with its fix
    except AttestError as exc:
        reason = exc.details.get("reason") or "refused"
        if reason in ("bad_node", "no_reason"):
            _say(args, "error", exc.msg)
            return 2
        if args.json:
            print(json.dumps({"node": args.node, "result": "refused", "reason": reason, "message": exc.msg,
                              "pcrs": exc.details.get("pcrs")}, indent=2, sort_keys=True))
        _say(args, "refused (%s)" % reason, exc.msg)
        return EXIT_REENROLL if reason in _REENROLL_REASONS else EXIT_REFUSED


def _required(parser, options):
    for option, text in options:
        parser.add_argument(option, required=True, help=text)


def register(parser):
    sub = parser.add_subparsers(dest="attest_command", metavar="ATTEST_COMMAND")
    ledger = dict(help="ledger path or postgresql:// URL (default: $GPUFLEET_LEDGER)")
    state = dict(required=True, metavar="DIR", help="the attestation state directory (open challenges, nonce "
                                                    "book; files 0600; created when missing)")

    def add(name, handler, help_text, description, node=True, uses_state=True, uses_ledger=True):
        each = sub.add_parser(name, help=help_text, description=description)
        if node:
            each.add_argument("node", metavar="NODE", help="the node's name (as the ledger names it)")
        if uses_ledger:
            each.add_argument("--ledger", **ledger)
        if uses_state:
            each.add_argument("--state-dir", **state)
        each.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
        each.set_defaults(func=run, handler=handler)
        return each

    challenge = add("enroll-challenge", cmd_enroll_challenge, "verify the EK certificate and write the credential "
                    "for the node's AK", "Verify the node's EK certificate against the CA bundle, read its AK "
                    "public area, and write the credential blob (tpm2_makecredential, offline) for the node's "
                    "tpm2_activatecredential. A node already enrolled with this EK and AK needs nothing (exit 0, "
                    "decision keep); a changed EK or AK is refused (exit %d) unless --reenroll --reason."
                    % EXIT_REENROLL)
    _required(challenge, (("--ek-cert", "the EK certificate (DER or PEM; '-' for stdin)"),
                          ("--ek-ca-bundle", "the TPM vendors' CA certificates (PEM)"),
                          ("--ak-public", "the AK's TPM2B_PUBLIC (tpm2_readpublic -f tss)"),
                          ("--credential-out", "where to write the credential blob (0600)")))
    challenge.add_argument("--reenroll", action="store_true", help="replace the node's enrollment (a person "
                           "checked the hardware); the old one stays in the ledger's history")
    challenge.add_argument("--reason", help="why the node is re-enrolled (required with --reenroll)")
    challenge.add_argument("--ttl", type=_POSITIVE, default=600, help="seconds the challenge stays open "
                           "(default: 600)")

    finish = add("enroll-finish", cmd_enroll_finish, "check the node's activated secret and record the "
                 "enrollment in the ledger", "Compare the secret the node's tpm2_activatecredential returned "
                 "with the open challenge's (once: the challenge is spent either way) and record the enrollment.")
    finish.add_argument("--secret", required=True, help="the file tpm2_activatecredential -o wrote ('-': stdin)")
    finish.add_argument("--by", help="who enrolls (default: $SUDO_USER or the login name)")

    add("nonce", cmd_nonce, "issue a fresh nonce for the node's next quote (printed alone)",
        "Issue a fresh nonce for NODE's next tpm2_quote -q and print it; each nonce is accepted once.",
        uses_ledger=False)

    verify = add("verify", cmd_verify, "verify a quote: enrolled AK, nonce, PCRs against signed references, "
                 "optionally the event log", "Verify the node's quote against its enrolled AK, a nonce issued to it "
                 "(consumed once) and the signed references of its image and firmware; with --event-log, replay "
                 "the log to the quoted PCRs. A refusal names the reason and the PCR or event (exit %d)."
                 % EXIT_REFUSED)
    _required(verify, (("--quote-message", "tpm2_quote -m FILE"), ("--quote-signature", "tpm2_quote -s FILE"),
                       ("--quote-pcrs", "tpm2_quote -o FILE -F values"),
                       ("--references", "the signed PCR reference file (signature at FILE.sig)"),
                       ("--image-key", "the image public key (PEM) that signed it"),
                       ("--image-version", "the node's image version"),
                       ("--firmware-version", "the node's firmware version")))
    verify.add_argument("--event-log", help="what tpm2_eventlog printed on the node (optional)")
    verify.add_argument("--reference-event-log", help="tpm2_eventlog output of a known-good node of this image")
    verify.add_argument("--nonce-ttl", type=_POSITIVE, default=300, help="seconds a nonce stays valid "
                        "(default: 300)")

    record = add("references", cmd_references, "record the reference PCRs of a known-good node, signed with the "
                 "image key", "Read what tpm2_pcrread printed on a qualified node of one image and firmware version "
                 "and write them, signed with the image key, to the reference file (FILE and FILE.sig). An "
                 "existing file must verify with that key; its other entries are kept.",
                 node=False, uses_state=False, uses_ledger=False)
    _required(record, (("--pcrread", "what tpm2_pcrread sha256:0,1,...,7 printed on the node ('-': stdin)"),
                       ("--image-version", "the node's image version"),
                       ("--firmware-version", "the node's firmware version"),
                       ("--key", "the image signing key (PEM; passphrase from $GPUFLEET_SIGNING_KEY_PASSPHRASE)"),
                       ("--out", "the reference file to write or add to (its signature goes to FILE.sig)")))
    record.add_argument("--replace", action="store_true", help="replace an existing entry of this image and "
                        "firmware version")

    show = add("show", cmd_show, "show enrollments (current ones; --history: every one)",
               "Print the current enrollment of NODE (or of every node); --history adds the replaced ones. "
               "Exit %d when NODE has no enrollment." % EXIT_REFUSED, node=False, uses_state=False)
    show.add_argument("node", metavar="NODE", nargs="?", help="one node (default: all)")
    show.add_argument("--history", action="store_true", help="include replaced enrollments")
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])
