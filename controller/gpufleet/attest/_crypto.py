"""The attestation package's one guarded import of ``cryptography``.

Ansible imports module_utils without third-party libraries in its sanity checks; a caller
that needs these names checks HAS_CRYPTOGRAPHY and reports it with missing_required_lib.
"""
try:
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
    HAS_CRYPTOGRAPHY = True
except ImportError:
    HAS_CRYPTOGRAPHY = False
    x509 = hashes = serialization = ec = padding = rsa = encode_dss_signature = None

    class InvalidSignature(Exception):
        """Stands in so ``except InvalidSignature`` still parses without cryptography."""

__all__ = ["HAS_CRYPTOGRAPHY", "InvalidSignature", "ec", "encode_dss_signature", "hashes", "padding", "rsa",
           "serialization", "x509"]
