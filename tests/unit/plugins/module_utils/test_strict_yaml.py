import os

import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils import strict_yaml
from ansible_collections.gpufleet.baremetal.plugins.module_utils.strict_yaml import StrictYamlError, load_file, loads


def test_reads_plain_yaml_and_shared_anchors():
    assert loads("a: &x [1, 2]\nb: *x\n") == {"a": [1, 2], "b": [1, 2]}
    assert loads("") is None


def test_a_duplicate_key_names_both_lines():
    with pytest.raises(StrictYamlError) as err:
        loads("checks:\n  gpu_burn: {min: 10}\n  gpu_burn: {min: 0}\n", "h100.yml")
    assert err.value.line == 3
    assert err.value.msg == ("h100.yml line 3: key 'gpu_burn' appears twice (first on line 2); "
                             "fix: keep one of the two keys")


def test_a_duplicate_key_in_a_nested_flow_mapping_is_refused():
    with pytest.raises(StrictYamlError, match="'x' appears twice"):
        loads("a: [{x: 1, x: 2}]")


def test_an_alias_bomb_is_refused_quickly_without_expanding_it():
    lines = ["l0: &l0 [a, a, a, a, a, a, a, a, a, a]"]
    lines += ["l%d: &l%d [%s]" % (i, i, ", ".join(["*l%d" % (i - 1)] * 10)) for i in range(1, 9)]
    with pytest.raises(StrictYamlError, match="expands to more than"):
        loads("\n".join(lines))


def test_deep_nesting_is_refused_not_a_recursion_error():
    with pytest.raises(StrictYamlError, match="nested deeper"):
        loads("a: " + "[" * 5000 + "]" * 5000)


@pytest.mark.parametrize("data, problem", [(b"a: \xff\xfe", "not UTF-8"), ("a: b: c", "not valid YAML")])
def test_bytes_that_are_not_text_or_yaml_are_refused(data, problem):
    with pytest.raises(StrictYamlError, match=problem):
        loads(data)


def test_files_that_are_not_regular_or_too_large_are_refused(tmp_path, monkeypatch):
    with pytest.raises(StrictYamlError, match="not a regular file"):
        load_file(os.devnull)
    with pytest.raises(StrictYamlError, match="not a regular file"):
        load_file(str(tmp_path))
    with pytest.raises(StrictYamlError, match="cannot read it"):
        load_file(str(tmp_path / "missing.yml"))
    big = tmp_path / "big.yml"
    big.write_bytes(b"a: 1\n" * 10)
    monkeypatch.setattr(strict_yaml, "MAX_BYTES", 20)
    with pytest.raises(StrictYamlError, match="larger than"):
        load_file(str(big))
