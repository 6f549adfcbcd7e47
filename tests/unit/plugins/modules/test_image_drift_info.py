import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufleet.baremetal.plugins.modules import image_drift_info
from tests.unit.plugins.module_utils.image.image_factory import PACKAGES, RELEASE, make_image, public_pem

PACKAGES_TEXT = "".join("%s\t%s\t%s\n" % (p["name"], p["version"], p["arch"]) for p in PACKAGES)
RELEASE_TEXT = "".join('%s="%s"\n' % kv for kv in RELEASE.items())


def run(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit) as exited:
        image_drift_info.main()
    return json.loads(capsys.readouterr().out), exited.value.code


def test_reports_no_drift_for_a_clean_node(capsys, tmp_path):
    manifest, key = make_image(tmp_path)
    result, code = run(capsys, manifest=manifest, public_key_content=public_pem(key).decode(),
                       packages=PACKAGES_TEXT, release=RELEASE_TEXT, held=["fio", "iperf3"], node="n1",
                       _ansible_check_mode=True)
    assert code == 0 and result["changed"] is False and result["drifted"] is False and result["node"] == "n1"


def test_reports_drift_per_kind(capsys, tmp_path):
    manifest, key = make_image(tmp_path)
    result, code = run(capsys, manifest=manifest, public_key_content=public_pem(key).decode(),
                       packages=PACKAGES_TEXT.replace("3.33-3", "3.35-1"), release=RELEASE_TEXT)
    assert code == 0 and result["drifted"] is True and result["count"] == 1
    assert result["packages"]["changed"][0]["package"] == "fio" and result["unheld_pins"] == []


def test_damaged_release_fails_closed(capsys, tmp_path):
    manifest, key = make_image(tmp_path)
    result, code = run(capsys, manifest=manifest, public_key_content=public_pem(key).decode(),
                       packages=PACKAGES_TEXT, release="garbage line\n", node="n9")
    assert code == 1 and "image-release of n9 line 1" in result["msg"]
