from ansible_collections.gpufleet.baremetal.plugins.modules import redfish_info
from tests.unit.plugins.module_utils.redfish.fake_bmc import FakeTransport, load_mockup
from tests.unit.plugins.module_utils.redfish.module_harness import run

BASE = dict(username="admin", password="pw", auth="basic")


def test_facts_from_the_tower_mockup_never_change(monkeypatch, capsys):
    fake = FakeTransport(load_mockup("public-tower"))
    result, failed = run(monkeypatch, capsys, redfish_info, dict(BASE, baseuri="bmc-1"),
                         {"bmc-1": fake}, check_mode=True)
    assert not failed and result["changed"] is False
    assert [g["id"] for g in result["facts"]["gpus"]] == ["GPU1", "GPU2"]
    assert {f["id"] for f in result["facts"]["firmware"]} == {"BIOS", "BMC"}
    assert all(c["method"] == "GET" for c in fake.sent)


def test_gather_subset_choices(monkeypatch, capsys):
    result, failed = run(monkeypatch, capsys, redfish_info,
                         dict(BASE, baseuri="bmc-1", gather_subset=["bogus"]))
    assert failed and "gather_subset" in result["msg"]


def test_logs_subset_returns_the_newest_entries_read_only(monkeypatch, capsys):
    fake = FakeTransport(load_mockup("public-rackmount1"))
    result, failed = run(monkeypatch, capsys, redfish_info,
                         dict(BASE, baseuri="bmc-1", gather_subset=["system", "logs"], log_entries=2),
                         {"bmc-1": fake}, check_mode=True)
    assert not failed and result["changed"] is False
    assert [e["id"] for e in result["facts"]["logs"]["entries"]] == ["2", "1"]
    assert "nics" not in result["facts"] and all(c["method"] == "GET" for c in fake.sent)
    assert "pw" not in str(result)


def test_log_entries_below_one_is_refused(monkeypatch, capsys):
    result, failed = run(monkeypatch, capsys, redfish_info,
                         dict(BASE, baseuri="bmc-1", gather_subset=["logs"], log_entries=0))
    assert failed and "log_entries" in result["msg"]


def test_tpm_subset_returns_the_ek_certificate_read_only(monkeypatch, capsys):
    fake = FakeTransport(load_mockup("public-rackmount1"))
    result, failed = run(monkeypatch, capsys, redfish_info,
                         dict(BASE, baseuri="bmc-1", gather_subset=["system", "tpm"]),
                         {"bmc-1": fake}, check_mode=True)
    assert not failed and result["changed"] is False
    (tpm,) = result["facts"]["tpm"]
    assert [c["usage_types"] for c in tpm["certificates"]] == [["Device"]]
    assert tpm["certificates"][0]["pem"].startswith("-----BEGIN CERTIFICATE-----")
    assert all(c["method"] == "GET" for c in fake.sent)


def test_tpm_subset_fails_the_node_with_the_reason(monkeypatch, capsys):
    tree = load_mockup("public-rackmount1")
    for path, resource in tree.items():
        if resource.get("@odata.type", "").startswith("#Certificate.") and "TrustedComponents" in path:
            resource["CertificateString"] = "not a certificate"
    result, failed = run(monkeypatch, capsys, redfish_info,
                         dict(BASE, baseuri="bmc-1", gather_subset=["system", "tpm"]),
                         {"bmc-1": FakeTransport(tree)})
    assert failed and "(reason: bad_certificate)" in result["msg"] and "CertificateString" in result["msg"]
