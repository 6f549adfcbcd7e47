import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import ManifestError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.inventory import parse_packages, pin_mismatches

TEXT = "libc6:amd64\t2.36-9+deb12u10\tamd64\nfio\t3.33-3\tamd64\n\n"


def test_parses_sorted_and_strips_arch_qualifier():
    packages = parse_packages(TEXT)
    assert [p["name"] for p in packages] == ["fio", "libc6"]
    assert packages[1] == {"name": "libc6", "version": "2.36-9+deb12u10", "arch": "amd64"}


def test_pin_mismatches_lists_wrong_and_missing():
    packages = parse_packages(TEXT)
    assert pin_mismatches({"fio": "3.33-3"}, packages) == []
    assert pin_mismatches({"fio": "3.33-4", "slurmd": "1"}, packages) == [
        {"package": "fio", "requested": "3.33-4", "installed": "3.33-3"},
        {"package": "slurmd", "requested": "1", "installed": None}]


@pytest.mark.parametrize("text, message", [("fio 3.33-3 amd64\n", "line 1 is not name<TAB>"), ("\n", "is empty")])
def test_rejects_malformed_lists(text, message):
    with pytest.raises(ManifestError, match=message):
        parse_packages(text)


def test_status_column_keeps_only_installed_packages():
    text = "fio\t3.33-3\tamd64\tinstalled\niperf3\t3.12-1+deb12u2\tamd64\tconfig-files\n"
    assert [p["name"] for p in parse_packages(text)] == ["fio"]
