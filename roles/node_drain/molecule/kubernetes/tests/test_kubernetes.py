"""node_drain cordoned node01 and evicted its pods in the lab's Kubernetes API SIMULATION (not a
real cluster): DaemonSet pods stay, a disruption-budget refusal is retried, other nodes' pods
are untouched; read back from the simulation's state and request log."""
import json
import os
import ssl
import urllib.request

testinfra_hosts = ["gpufleet-k8s-drain-node"]

LAB = os.path.join(os.environ.get("GPUFLEET_K8S_LAB_DIR", ""), "node_drain")


def _api(path):
    with open(os.path.join(LAB, "admin.token"), encoding="utf-8") as handle:
        token = handle.read().strip()
    context = ssl.create_default_context(cafile=os.path.join(LAB, "ca.crt"))
    request = urllib.request.Request("https://127.0.30.3:6443" + path, headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, context=context, timeout=10) as response:
        return json.loads(response.read())


def _pods():
    return sorted("%s/%s@%s" % (p["metadata"]["namespace"], p["metadata"]["name"], p["spec"]["nodeName"])
                  for p in _api("/api/v1/pods")["items"])


def test_node_is_cordoned():
    assert _api("/api/v1/nodes/node01")["spec"]["unschedulable"] is True
    assert not _api("/api/v1/nodes/node02")["spec"].get("unschedulable")


def test_only_the_daemonset_pod_and_other_nodes_pods_remain():
    assert _pods() == ["default/web-3@node02", "kube-system/gpu-agent-node01@node01"]


def test_evictions_went_through_the_eviction_api_with_the_grace_period():
    log = _api("/sim/requests")["items"]
    evictions = [e for e in log if e["path"].endswith("/eviction")]

    def statuses(name):
        return [e["status"] for e in evictions if e["path"].split("/")[-2] == name]

    assert {e["path"].split("/")[-2] for e in evictions} == {"web-1", "web-2"}, evictions  # not the DaemonSet's
    assert statuses("web-2")[:3] == [429, 429, 201], evictions
    assert statuses("web-1")[0] == 201, evictions
    assert all(e["body"]["deleteOptions"]["gracePeriodSeconds"] == 5 for e in evictions)


def test_idempotence_run_evicted_nothing_new():
    log = _api("/sim/requests")["items"]
    cordons = [e for e in log if e["method"] == "PATCH" and e["path"] == "/api/v1/nodes/node01"
               and e["body"] == {"spec": {"unschedulable": True}}]
    assert len(cordons) == 2, cordons  # the refused drain's cordon (then reverted) and the real one
    accepted = [e for e in log if e["path"].endswith("/eviction") and e["status"] == 201]
    assert len({e["path"] for e in accepted}) == 2
