"""Software TPMs shared by the attestation tests (one per role, manufactured once per session)."""
import pytest

from tests.unit.gpufleet.attest.swtpm_support import LocalCa, SoftTpm, require_tools


@pytest.fixture(scope="session")
def vendor_ca(tmp_path_factory):
    require_tools()
    return LocalCa(str(tmp_path_factory.mktemp("vendor-ca")))


@pytest.fixture(scope="session")
def other_ca(tmp_path_factory):
    require_tools()
    return LocalCa(str(tmp_path_factory.mktemp("other-ca")))


def _tpm(tmp_path_factory, ca, name):
    tpm = SoftTpm(str(tmp_path_factory.mktemp(name)), ca).start()
    yield tpm
    tpm.stop()


@pytest.fixture(scope="session")
def node_tpm(tmp_path_factory, vendor_ca):
    """The TPM of the node under test, certified by the trusted vendor CA."""
    yield from _tpm(tmp_path_factory, vendor_ca, "node-tpm")


@pytest.fixture(scope="session")
def swapped_tpm(tmp_path_factory, vendor_ca):
    """Another genuine TPM of the same vendor: what a board swap puts in the node."""
    yield from _tpm(tmp_path_factory, vendor_ca, "swapped-tpm")


@pytest.fixture(scope="session")
def foreign_tpm(tmp_path_factory, other_ca):
    """A TPM whose EK certificate another CA (of the same name) signed."""
    yield from _tpm(tmp_path_factory, other_ca, "foreign-tpm")
