"""node01 joined the lab's Kubernetes API SIMULATION with the startup taint and was untainted
only after the gate passed; read back from the simulation's state and request log."""
import json
import os
import ssl
import urllib.request

testinfra_hosts = ["gpufleet-k8s-join-node"]

LAB = os.path.join(os.environ.get("GPUFLEET_K8S_LAB_DIR", ""), "cluster_join")
TAINT = "gpufleet.io/unvalidated"


def _api(path):
    with open(os.path.join(LAB, "admin.token"), encoding="utf-8") as handle:
        token = handle.read().strip()
    context = ssl.create_default_context(cafile=os.path.join(LAB, "ca.crt"))
    request = urllib.request.Request("https://127.0.30.1:6443" + path, headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, context=context, timeout=10) as response:
        return json.loads(response.read())


def test_join_configuration_is_private_and_v1beta4(host):
    config = host.file("/etc/kubernetes/gpufleet-join.yaml")
    assert config.mode == 0o600 and config.user == "root"
    assert "apiVersion: kubeadm.k8s.io/v1beta4" in config.content_string


def test_kubelet_conf_written_by_the_join(host):
    conf = host.file("/etc/kubernetes/kubelet.conf")
    assert conf.exists and conf.mode == 0o600
    assert "https://k8s-api:6443" in conf.content_string


def test_kubelet_got_the_startup_taint_and_extra_args(host):
    flags = host.file("/var/lib/kubelet/kubeadm-flags.env").content_string
    assert "--register-with-taints=%s:NoSchedule" % TAINT in flags
    assert "--node-labels=gpufleet.io/pool=molecule" in flags


def test_node_is_admitted():
    node = _api("/api/v1/nodes/node01")
    assert [t for t in node["spec"].get("taints", []) if t["key"] == TAINT] == []
    assert node["metadata"]["labels"]["gpufleet.io/pool"] == "molecule"


def test_node_was_registered_tainted_by_the_bootstrap_token_then_untainted_by_the_admin():
    log = _api("/sim/requests")["items"]
    creates = [e for e in log if e["method"] == "POST" and e["path"] == "/api/v1/nodes" and e["status"] == 201]
    assert len(creates) == 1, creates
    assert creates[0]["user"].startswith("system:bootstrap:")
    assert {"key": TAINT, "effect": "NoSchedule"} in creates[0]["body"]["spec"]["taints"]
    untaints = [e for e in log if e["method"] == "PATCH" and e["path"] == "/api/v1/nodes/node01"
                and e["status"] == 200 and not e["query"].get("dryRun")]
    assert len(untaints) == 1, untaints  # one removal; the idempotence run sent none
    assert untaints[0]["user"] == "kubernetes-admin"
    assert untaints[0]["time"] > creates[0]["time"]
    assert TAINT not in json.dumps(untaints[0]["body"])
