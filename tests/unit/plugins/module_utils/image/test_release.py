import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import ManifestError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.release import parse_release, release_mismatches

TEXT = '# comment\nNAME="gpufleet node image"\nVERSION="lab"\nBUILD_ID=lab-docker-abc\nPINS_SHA256="ff"\n\n'


def test_parses_quoted_and_bare_values():
    values = parse_release(TEXT)
    assert values == {"NAME": "gpufleet node image", "VERSION": "lab", "BUILD_ID": "lab-docker-abc", "PINS_SHA256": "ff"}
    assert release_mismatches(values, dict(values)) == []
    assert release_mismatches(values, dict(values, BUILD_ID="x")) == [
        {"key": "BUILD_ID", "expected": "x", "actual": "lab-docker-abc"}]


@pytest.mark.parametrize("text, message", [
    ('VERSION="lab"\nBUILD_ID="x"\n', "lacks PINS_SHA256"),
    ('VERSION = "lab"\n', "line 1 is not KEY=\"value\""),
    ('VERSION="lab\n', "line 1"),
])
def test_rejects_damaged_files(text, message):
    with pytest.raises(ManifestError, match=message):
        parse_release(text, "node-1")
