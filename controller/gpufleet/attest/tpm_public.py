"""TPM 2.0 wire structures the controller reads: TPM2B_PUBLIC (an AK), its name, TPMT_SIGNATURE.

Parsed here rather than through tpm2-tools so the controller computes the AK's name itself
(the name credential activation binds to) and derives the AK's PEM from the same bytes: a node
cannot pair one key's name with another key's PEM.
"""
import hashlib
import struct

from cryptography.hazmat.primitives.asymmetric import ec, rsa

from gpufleet.attest.errors import AttestError

__all__ = ["HASHES", "Reader", "check_ak_attributes", "parse_public", "parse_signature"]

ALG_RSA, ALG_ECC, ALG_NULL = 0x0001, 0x0023, 0x0010
HASHES = {0x0004: "sha1", 0x000B: "sha256", 0x000C: "sha384", 0x000D: "sha512"}
SIG_RSASSA, SIG_RSAPSS, SIG_ECDSA = 0x0014, 0x0016, 0x0018
_CURVES = {0x0003: "secp256r1", 0x0004: "secp384r1", 0x0005: "secp521r1"}
# TPMA_OBJECT bits an attestation key must carry: it never leaves this TPM, it was made inside it,
# and it signs only TPM-generated structures (restricted), so it cannot sign a forged quote.
FIXED_TPM, FIXED_PARENT, SENSITIVE_DATA_ORIGIN = 1 << 1, 1 << 4, 1 << 5
RESTRICTED, DECRYPT, SIGN = 1 << 16, 1 << 17, 1 << 18
AK_REQUIRED = {"fixedTPM": FIXED_TPM, "fixedParent": FIXED_PARENT, "sensitiveDataOrigin": SENSITIVE_DATA_ORIGIN,
               "restricted": RESTRICTED, "sign": SIGN}


class Reader:
    """Big-endian reads over TPM marshalled bytes; AttestError naming ``what`` when they run short."""

    def __init__(self, data, what, error=AttestError):
        self.data, self.pos, self.what, self.error = data, 0, what, error

    def take(self, size):
        if self.pos + size > len(self.data):
            raise self.error("%s is truncated (%d bytes, needed %d more at offset %d). Send the file the tool "
                             "wrote, unchanged." % (self.what, len(self.data), size, self.pos))
        chunk = self.data[self.pos:self.pos + size]
        self.pos += size
        return chunk

    def u8(self):
        return struct.unpack(">B", self.take(1))[0]

    def u16(self):
        return struct.unpack(">H", self.take(2))[0]

    def u32(self):
        return struct.unpack(">I", self.take(4))[0]

    def u64(self):
        return struct.unpack(">Q", self.take(8))[0]

    def sized(self):
        return self.take(self.u16())

    def done(self):
        return self.pos == len(self.data)


def _scheme(reader):
    alg = reader.u16()
    return (alg, reader.u16()) if alg != ALG_NULL else (alg, None)


def _symmetric(reader):
    if reader.u16() != ALG_NULL:
        reader.u16()  # key bits
        reader.u16()  # mode


def _rsa_key(reader):
    _symmetric(reader)
    scheme = _scheme(reader)
    reader.u16()  # key bits: implied by the modulus
    exponent = reader.u32() or 65537
    modulus = int.from_bytes(reader.sized(), "big")
    return rsa.RSAPublicNumbers(exponent, modulus).public_key(), scheme


def _ecc_key(reader, what):
    _symmetric(reader)
    scheme = _scheme(reader)
    curve_id = reader.u16()
    _scheme(reader)  # kdf
    x, y = int.from_bytes(reader.sized(), "big"), int.from_bytes(reader.sized(), "big")
    curve = _CURVES.get(curve_id)
    if curve is None:
        raise AttestError("%s uses TPM curve 0x%04x; only NIST P-256/384/521 are supported." % (what, curve_id))
    return ec.EllipticCurvePublicNumbers(x, y, getattr(ec, curve.upper())()).public_key(), scheme


def parse_public(data, what="AK public (TPM2B_PUBLIC)"):
    """TPM2B_PUBLIC bytes (``tpm2_readpublic -f tss``) -> {"key", "name" (hex), "attributes", "scheme"}."""
    outer = Reader(data, what)
    body = outer.sized()
    if not outer.done() or not body:
        raise AttestError("%s is not one TPM2B_PUBLIC structure. Send the file `tpm2_readpublic -c ak.ctx -f tss "
                          "-o ak.pub` wrote." % what)
    reader = Reader(body, what)
    key_type, name_alg, attributes = reader.u16(), reader.u16(), reader.u32()
    reader.sized()  # authPolicy
    if name_alg not in HASHES:
        raise AttestError("%s has name algorithm 0x%04x; expected sha1/sha256/sha384/sha512." % (what, name_alg))
    if key_type == ALG_RSA:
        key, scheme = _rsa_key(reader)
    elif key_type == ALG_ECC:
        key, scheme = _ecc_key(reader, what)
    else:
        raise AttestError("%s is a key of TPM type 0x%04x, not RSA or ECC. Create the AK with tpm2_createak -G rsa."
                          % (what, key_type))
    if not reader.done():
        raise AttestError("%s has %d trailing bytes after the key. Send the file tpm2_readpublic wrote, unchanged."
                          % (what, len(body) - reader.pos))
    name = struct.pack(">H", name_alg) + hashlib.new(HASHES[name_alg], body).digest()
    return {"key": key, "name": name.hex(), "attributes": attributes, "scheme": scheme}


def check_ak_attributes(attributes, what="the AK"):
    """AttestError unless the attributes make a restricted, TPM-bound signing key."""
    missing = [label for label, bit in sorted(AK_REQUIRED.items()) if not attributes & bit]
    if missing or attributes & DECRYPT:
        raise AttestError("%s is not an attestation key: %s. Create it with tpm2_createak (a restricted signing key "
                          "fixed to the TPM)." % (what, ", ".join(["lacks " + m for m in missing]
                                                                  + (["can decrypt"] if attributes & DECRYPT else []))),
                          reason="not_ak")


def parse_signature(data, what="quote signature (TPMT_SIGNATURE)"):
    """TPMT_SIGNATURE bytes (``tpm2_quote -s``, plain format) -> (scheme, hash name, signature bytes)."""
    reader = Reader(data, what)
    scheme, hash_alg = reader.u16(), reader.u16()
    if hash_alg not in HASHES:
        raise AttestError("%s uses hash 0x%04x; expected sha1/sha256/sha384/sha512." % (what, hash_alg))
    if scheme in (SIG_RSASSA, SIG_RSAPSS):
        signature = reader.sized()
    elif scheme == SIG_ECDSA:
        r, s = reader.sized(), reader.sized()
        signature = (int.from_bytes(r, "big"), int.from_bytes(s, "big"))
    else:
        raise AttestError("%s has scheme 0x%04x; expected RSASSA, RSAPSS or ECDSA. Quote with tpm2_quote's default "
                          "signature format." % (what, scheme))
    if not reader.done():
        raise AttestError("%s has trailing bytes. Send the file tpm2_quote -s wrote, unchanged." % what)
    return scheme, HASHES[hash_alg], signature
