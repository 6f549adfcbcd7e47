"""Errors of the attestation package: EK certificates, enrollment, quotes, PCR references."""
from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError

__all__ = ["AttestError", "EkCertError", "EnrollmentError", "PcrReferenceError", "QuoteError"]


class AttestError(GpufleetError):
    """Base of every attestation refusal: the node is not trusted until it is resolved."""


class EkCertError(AttestError):
    """An EK certificate does not parse, does not chain to the CA bundle, or is not an EK certificate."""


class EnrollmentError(AttestError):
    """Credential activation failed, or the node's EK differs from the enrolled one."""


class QuoteError(AttestError):
    """A quote's signature, nonce or PCR values do not verify."""


class PcrReferenceError(AttestError):
    """A PCR reference file is unreadable, unsigned, signed by another key or malformed."""
