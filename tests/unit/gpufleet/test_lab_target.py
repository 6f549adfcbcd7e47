"""``--lab`` variable files: merged in order, read strictly (a key twice is an error)."""
import pytest

from gpufleet import lab_target
from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError


def test_files_merge_in_order(tmp_path):
    first, second = tmp_path / "a.yml", tmp_path / "b.yml"
    first.write_text("gpufleet_ledger: /a.sqlite\nkeep: 1\n")
    second.write_text("gpufleet_ledger: /b.sqlite\n")
    assert lab_target.merged_vars([str(first), str(second)]) == {"gpufleet_ledger": "/b.sqlite", "keep": 1}


def test_a_key_written_twice_is_refused_naming_both_lines(tmp_path):
    """PyYAML alone keeps the last: the second ledger would be used without a word."""
    path = tmp_path / "vars.yml"
    path.write_text("gpufleet_ledger: /lab/ledger.sqlite\ngpufleet_ledger: /prod/ledger.sqlite\n")
    with pytest.raises(lab_target.VarsFileError) as caught:
        lab_target.merged_vars([str(path)])
    assert str(caught.value) == ("Variable file %s line 2: key 'gpufleet_ledger' appears twice (first on line 1); "
                                 "fix: keep one of the two keys" % path)
    assert isinstance(caught.value, (GpufleetError, ValueError))   # one line from every command


@pytest.mark.parametrize("raw, words", [
    (b"- a\n- b\n", "the top level is a list, not a mapping of variables"),
    (b"gpufleet_ledger: \xff\n", "not UTF-8 text"),
    (b"gpufleet_ledger: [\n", "not valid YAML"),
])
def test_unusable_files_are_one_error_naming_the_file(tmp_path, raw, words):
    path = tmp_path / "vars.yml"
    path.write_bytes(raw)
    with pytest.raises(lab_target.VarsFileError) as caught:
        lab_target.merged_vars([str(path)])
    assert str(path) in str(caught.value) and words in str(caught.value) and "fix:" in str(caught.value)


def test_no_running_lab_is_a_lookup_error_saying_to_start_one(tmp_path, monkeypatch):
    monkeypatch.setattr(lab_target, "vars_path", lambda: str(tmp_path / "vars.yml"))
    with pytest.raises(lab_target.NoRunningLab) as caught:
        lab_target.merged_vars([str(tmp_path / "vars.yml")])
    assert isinstance(caught.value, (LookupError, GpufleetError)) and "gpufleet lab up" in str(caught.value)
