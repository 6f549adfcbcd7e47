import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import (
    VerificationError,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.trusted_key import (
    KEY_OPTIONS, key_module_kwargs, read_public_key,
)


def test_kwargs_add_the_key_options_as_one_required_exclusive_pair():
    kwargs = key_module_kwargs(manifest=dict(type="path", required=True))
    assert set(kwargs["argument_spec"]) == {"manifest", "public_key", "public_key_content"}
    assert kwargs["mutually_exclusive"] == [KEY_OPTIONS] == kwargs["required_one_of"]
    assert kwargs["supports_check_mode"] is True


def test_reads_the_file_or_the_content(tmp_path):
    key = tmp_path / "k.pub"
    key.write_bytes(b"-----BEGIN PUBLIC KEY-----\n")
    assert read_public_key({"public_key": str(key)}) == (b"-----BEGIN PUBLIC KEY-----\n", str(key))
    assert read_public_key({"public_key": None, "public_key_content": "PEM"}) == (
        b"PEM", "public_key_content")


def test_unreadable_file_names_the_file_and_the_fix(tmp_path):
    missing = str(tmp_path / "nope.pub")
    with pytest.raises(VerificationError) as err:
        read_public_key({"public_key": missing})
    assert missing in err.value.msg and "No such file" in err.value.msg
    assert "public_key_content" in err.value.msg
