"""node_labels set node01's labels and taints in the lab's Kubernetes API SIMULATION (not a
real cluster), merged with what the Node already had; read back from the simulation."""
import json
import os
import ssl
import urllib.request

testinfra_hosts = ["gpufleet-k8s-labels-node"]

LAB = os.path.join(os.environ.get("GPUFLEET_K8S_LAB_DIR", ""), "node_labels")


def _api(path):
    with open(os.path.join(LAB, "admin.token"), encoding="utf-8") as handle:
        token = handle.read().strip()
    context = ssl.create_default_context(cafile=os.path.join(LAB, "ca.crt"))
    request = urllib.request.Request("https://127.0.30.2:6443" + path, headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, context=context, timeout=10) as response:
        return json.loads(response.read())


def test_labels_merged_into_the_node():
    labels = _api("/api/v1/nodes/node01")["metadata"]["labels"]
    assert labels == {
        "kubernetes.io/hostname": "node01",  # the kubelet's label stays
        "gpufleet.io/sku": "h100-sxm-8",
        "gpufleet.io/rack": "r12",
        "gpufleet.io/image-version": "2026.06.2",
        "gpufleet.io/gpu-count": "8",
    }


def test_taints_added_next_to_the_operators():
    taints = _api("/api/v1/nodes/node01")["spec"]["taints"]
    assert sorted(taints, key=lambda t: t["key"]) == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "ops.example.com/keep", "value": "true", "effect": "PreferNoSchedule"},
    ]


def test_rerun_changed_nothing():
    log = _api("/sim/requests")["items"]
    patches = [e for e in log if e["method"] == "PATCH" and e["path"] == "/api/v1/nodes/node01" and e["status"] == 200
               and not e["query"].get("dryRun")]
    # k8s (state=patched) sends its patch on every run; like the API server, the simulation bumps
    # resourceVersion only when the object changed: converge changed labels and taints (two
    # versions), the idempotence run sent the labels patch again and changed nothing.
    assert len(patches) == 3, patches
    assert len({e["resourceVersion"] for e in patches}) == 2, patches
    assert patches[-1]["resourceVersion"] == _api("/api/v1/nodes/node01")["metadata"]["resourceVersion"]


def test_node_local_record(host):
    record = json.loads(host.file("/etc/gpufleet/labels.json").content_string)
    assert record["scheduler"] == "kubernetes"
    assert record["k8s_labels"]["gpufleet.io/sku"] == "h100-sxm-8"
