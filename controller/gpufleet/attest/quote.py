"""Controller-side verification of a TPM quote against the node's enrolled AK and reference PCRs.

The node runs ``tpm2_quote -c ak.ctx -l sha256:0,1,... -q NONCE -m quote.msg -s quote.sig
-o quote.pcrs -F values -g sha256`` with the enrolled AK and sends the three files. The
TPMS_ATTEST message is parsed here with ``cryptography`` rather than handed to
``tpm2_checkquote``: each refusal then says exactly what failed (signature, which nonce, which
PCR), and the per-join check needs no TPM tools on the controller.

Order (fail closed at the first failure, except PCRs, which are all named):
signature by the enrolled AK -> nonce issued by the controller for this node and unused ->
the sent PCR values hash to the signed PCR digest -> every reference PCR quoted and equal.
"""
import binascii
import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import time

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from gpufleet.attest.errors import AttestError, QuoteError
from gpufleet.attest.tpm_public import (
    HASHES, SIG_ECDSA, SIG_RSAPSS, Reader, parse_signature)
from gpufleet.deploy.orders import write_private   # the controller's one 0600 atomic writer

__all__ = ["NonceBook", "compare_pcrs", "parse_attest", "split_pcr_values", "verify_join", "verify_quote"]

TPM_GENERATED = 0xFF544347
ST_ATTEST_QUOTE = 0x8018
NONCE_BYTES = 20


def parse_attest(message):
    """TPMS_ATTEST of a quote -> {"extra_data" (hex), "selection": [(bank, [pcr, ...])], "pcr_digest", ...}."""
    what = "quote message (TPMS_ATTEST)"
    reader = Reader(message, what, QuoteError)
    magic, kind = reader.u32(), reader.u16()
    if magic != TPM_GENERATED or kind != ST_ATTEST_QUOTE:
        raise QuoteError("The %s is not a TPM-generated quote (magic 0x%08x, type 0x%04x). Send the file "
                         "tpm2_quote -m wrote." % (what, magic, kind), reason="not_quote")
    signer = reader.sized()
    extra = reader.sized()
    clock, reset_count, restart_count, safe = reader.u64(), reader.u32(), reader.u32(), reader.u8()
    firmware = reader.u64()
    selection = []
    for _index in range(reader.u32()):
        alg, size = reader.u16(), reader.u8()
        bits = reader.take(size)
        bank = HASHES.get(alg)
        if bank is None:
            raise QuoteError("The %s selects PCR bank 0x%04x, which is not supported." % (what, alg))
        selection.append((bank, [i * 8 + j for i, byte in enumerate(bytearray(bits)) for j in range(8)
                                 if byte & (1 << j)]))
    digest = reader.sized()
    if not reader.done():
        raise QuoteError("The %s has trailing bytes. Send the file tpm2_quote -m wrote, unchanged." % what)
    return {"signer_name": signer.hex(), "extra_data": extra.hex(), "clock": clock, "reset_count": reset_count,
            "restart_count": restart_count, "safe": bool(safe), "firmware_version": firmware,
            "selection": selection, "pcr_digest": digest.hex()}


def split_pcr_values(values, selection):
    """``tpm2_quote -F values`` bytes -> {bank: {pcr index (str): hex}} in the signed selection's order."""
    pcrs, pos = {}, 0
    for bank, indices in selection:
        size = hashlib.new(bank).digest_size
        for index in indices:
            chunk = values[pos:pos + size]
            if len(chunk) != size:
                raise QuoteError("The PCR values file is %d bytes; the quote selects more PCRs than it holds. Quote "
                                 "with tpm2_quote -o quote.pcrs -F values and send that file." % len(values),
                                 reason="pcr_values")
            pcrs.setdefault(bank, {})[str(index)] = chunk.hex()
            pos += size
    if pos != len(values):
        raise QuoteError("The PCR values file has %d bytes beyond the PCRs the quote selects. Send the file "
                         "tpm2_quote -o ... -F values wrote with this quote." % (len(values) - pos),
                         reason="pcr_values")
    return pcrs


def _verify_signature(public_key, message, signature):
    scheme, hash_name, sig = parse_signature(signature)
    algorithm = getattr(hashes, hash_name.upper())()
    try:
        if isinstance(public_key, rsa.RSAPublicKey) and scheme != SIG_ECDSA:
            pad = (padding.PSS(padding.MGF1(algorithm), padding.PSS.AUTO) if scheme == SIG_RSAPSS
                   else padding.PKCS1v15())
            public_key.verify(sig, message, pad, algorithm)
        elif isinstance(public_key, ec.EllipticCurvePublicKey) and scheme == SIG_ECDSA:
            public_key.verify(encode_dss_signature(*sig), message, ec.ECDSA(algorithm))
        else:
            return None
    except InvalidSignature:
        return None
    return hash_name


def compare_pcrs(quoted, references):
    """[(bank:index, expected, quoted or None)] for every reference PCR that differs or was not quoted."""
    differ = []
    for bank, values in sorted((references or {}).items()):
        for index, expected in sorted(values.items(), key=lambda item: int(item[0])):
            expected = str(expected).lower()
            expected = expected[2:] if expected.startswith("0x") else expected
            found = quoted.get(bank, {}).get(str(index))
            if found != expected:
                differ.append(("%s:%s" % (bank, index), expected, found))
    return differ


def verify_quote(ak_pem, message, signature, pcr_values, nonce, references):
    """Verify one quote; return {"pcrs": {bank: {index: hex}}, "attest": parsed}. QuoteError otherwise.

    ``nonce``: the hex nonce this quote must carry. ``references``: {"sha256": {"0": hex, ...}}.
    """
    if not references or not any(references.values()):
        raise QuoteError("No reference PCR values were given, so the quote would prove nothing. Load the signed "
                         "reference file for the node's image and firmware.", reason="no_references")
    try:
        public_key = serialization.load_pem_public_key(ak_pem.encode("ascii") if isinstance(ak_pem, str)
                                                       else ak_pem)
        attest = parse_attest(message)
        hash_name = _verify_signature(public_key, message, signature)
    except (ValueError, TypeError, AttestError) as exc:
        raise QuoteError("The quote cannot be checked: %s" % getattr(exc, "msg", exc), reason="malformed")
    if hash_name is None:
        raise QuoteError("The quote's signature does not verify with the enrolled AK. Refusing it: it was signed "
                         "by another key (an AK that was never enrolled) or altered.", reason="bad_signature")
    if not hmac.compare_digest(attest["extra_data"], (nonce or "").lower()):
        raise QuoteError("The quote carries nonce %s, not the controller's %s for this join. Refusing it."
                         % (attest["extra_data"] or "(none)", nonce), reason="wrong_nonce")
    values = bytes(pcr_values)
    pcrs = split_pcr_values(values, attest["selection"])
    if hashlib.new(hash_name, values).hexdigest() != attest["pcr_digest"]:
        raise QuoteError("The PCR values sent with the quote do not hash to the digest the TPM signed. Refusing "
                         "them: they were altered or belong to another quote.", reason="pcr_digest")
    differ = compare_pcrs(pcrs, references)
    if differ:
        raise QuoteError("PCR values differ from the references: %s. The node booted something other than the "
                         "reference image and firmware; refusing it." % "; ".join(
                             "PCR %s is %s, expected %s" % (key, found or "not quoted", expected)
                             for key, expected, found in differ),
                         reason="pcr_mismatch", pcrs=[key for key, _e, _f in differ])
    return {"pcrs": pcrs, "attest": attest}


class NonceBook:
    """Nonces the controller issued per node; each may be consumed once, within ``ttl_s`` seconds.

    With ``path`` the book is a JSON file (atomic, 0600), so a restart cannot make a used nonce
    usable again. ``keep_used`` bounds the remembered used nonces per node; older ones are
    still refused, as "unknown".
    """

    def __init__(self, path=None, ttl_s=300, clock=time.time, keep_used=1024):
        self.path, self.ttl_s, self.clock, self.keep_used = path, ttl_s, clock, keep_used
        self.issued, self.used = {}, {}
        if path and os.path.exists(path):
            try:
                with open(path, "rb") as handle:
                    state = json.loads(handle.read().decode("utf-8"))
                self.issued, self.used = dict(state["issued"]), dict(state["used"])
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise QuoteError("The nonce book %s cannot be read: %s. Refusing to guess which nonces were used; "
                                 "remove it only when no join is in flight." % (path, exc), path=path)

    @classmethod
    @contextlib.contextmanager
    def locked(cls, path, **kwargs):
        """The book at ``path`` read and kept under an exclusive lock (``<path>.lock``) until the block
        ends, so concurrent controller processes never lose an issued nonce or un-use a consumed one."""
        os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
        fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield cls(path, **kwargs)
        finally:
            os.close(fd)   # closing releases the lock

    def _save(self):
        if self.path:
            write_private(self.path, (json.dumps({"issued": self.issued, "used": self.used}, sort_keys=True, indent=2)
                                     + "\n").encode("utf-8"))

    def issue(self, node):
        """A fresh hex nonce for ``node``'s next quote."""
        nonce = binascii.hexlify(os.urandom(NONCE_BYTES)).decode("ascii")
        self.issued.setdefault(node, {})[nonce] = self.clock()
        self._save()
        return nonce

    def consume(self, node, nonce):
        """Mark ``nonce`` used; QuoteError with reason "replayed", "unknown" or "expired" when refused."""
        nonce = (nonce or "").lower()
        if nonce in self.used.get(node, []):
            raise QuoteError("Node %s sent a quote with nonce %s, which was already used: a replayed quote. "
                             "Refusing it." % (node, nonce), node=node, reason="replayed")
        issued_at = self.issued.get(node, {}).pop(nonce, None)
        if issued_at is None:
            raise QuoteError("Node %s sent a quote with nonce %s, which the controller never issued to it. "
                             "Refusing it." % (node, nonce or "(none)"), node=node, reason="unknown")
        self.used[node] = (self.used.get(node, []) + [nonce])[-self.keep_used:]
        self._save()
        if self.clock() - issued_at > self.ttl_s:
            raise QuoteError("Node %s answered nonce %s after %.0f s, past the %d s limit. Refusing it; ask for a "
                             "new quote." % (node, nonce, self.clock() - issued_at, self.ttl_s),
                             node=node, reason="expired")


def verify_join(store, book, node, message, signature, pcr_values, references):
    """A join's check: the node's enrollment, its nonce (consumed once) and its quote; QuoteError when refused."""
    record = store.get(node)
    if record is None:
        raise QuoteError("Node %s is not enrolled: there is no AK to check its quote against. Enroll it first."
                         % node, node=node, reason="not_enrolled")
    try:
        nonce = parse_attest(message)["extra_data"]
    except AttestError as exc:
        raise QuoteError("Node %s: %s" % (node, exc.msg), node=node, reason="malformed")
    book.consume(node, nonce)
    try:
        return verify_quote(record["ak_pem"], message, signature, pcr_values, nonce, references)
    except QuoteError as exc:
        raise QuoteError("Node %s: %s" % (node, exc.msg), **dict(exc.details, node=node))
