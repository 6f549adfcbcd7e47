"""Object store of the lab's Kubernetes API simulation (lab/k8s/sim_store.py): resourceVersion,
validation, selectors, evictions and graceful deletion. No sockets; a fake clock."""
import pytest

from lab.k8s.sim_store import REFUSE_EVICTIONS, ApiError, Store

SMP = "application/strategic-merge-patch+json"


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture()
def store():
    clock = Clock()
    store = Store(termination_seconds=2.0, clock=clock)
    store.clock_ref = clock
    store.create("nodes", None, {"metadata": {"name": "n1"}})
    return store


def _pod(name, node="n1", owner="ReplicaSet", annotations=None):
    return {"metadata": {"name": name, "annotations": annotations or {},
                         "ownerReferences": [{"kind": owner, "name": "o", "uid": "u", "apiVersion": "apps/v1"}]},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]}}


def _names(result):
    return [p["metadata"]["name"] for p in result["items"]]


def test_resource_version_bumps_only_on_change(store):
    rv = store.get("nodes", None, "n1")["metadata"]["resourceVersion"]
    changed = store.patch("nodes", None, "n1", {"metadata": {"labels": {"a": "b"}}}, SMP)
    assert int(changed["metadata"]["resourceVersion"]) > int(rv)
    same = store.patch("nodes", None, "n1", {"metadata": {"labels": {"a": "b"}}}, SMP)
    assert same["metadata"]["resourceVersion"] == changed["metadata"]["resourceVersion"]


def test_dry_run_patch_stores_nothing(store):
    result = store.patch("nodes", None, "n1", {"spec": {"unschedulable": True}}, SMP, dry_run=True)
    assert result["spec"]["unschedulable"] is True
    assert "unschedulable" not in store.get("nodes", None, "n1")["spec"]


def test_stale_resource_version_conflicts(store):
    with pytest.raises(ApiError) as info:
        store.patch("nodes", None, "n1", {"metadata": {"resourceVersion": "1"}, "spec": {"unschedulable": True}}, SMP)
    assert info.value.code == 409


@pytest.mark.parametrize("patch, code", [
    ({"metadata": {"labels": {"gpufleet.io/gpu-count": 8}}}, 400),  # label values are strings
    ({"metadata": {"labels": {"bad key!": "x"}}}, 422),
    ({"metadata": {"labels": {"a": "x" * 64}}}, 422),
    ({"spec": {"taints": [{"key": "t", "effect": "Sometimes"}]}}, 422),
    ({"spec": {"taints": [{"key": "t", "effect": "NoSchedule"}, {"key": "t", "effect": "NoSchedule"}]}}, 422),
    ({"spec": {"unschedulable": "yes"}}, 400),
    ({"metadata": {"name": "renamed"}}, 422),
])
def test_invalid_patches_are_refused_and_change_nothing(store, patch, code):
    before = store.get("nodes", None, "n1")
    with pytest.raises(ApiError) as info:
        store.patch("nodes", None, "n1", patch, SMP)
    assert info.value.code == code
    assert store.get("nodes", None, "n1") == before


def test_missing_objects_and_namespaces(store):
    with pytest.raises(ApiError) as info:
        store.get("nodes", None, "nope")
    assert (info.value.code, info.value.reason) == (404, "NotFound")
    with pytest.raises(ApiError) as info:
        store.create("pods", "no-such-ns", _pod("p"))
    assert info.value.code == 404
    store.create("pods", "default", _pod("p"))
    with pytest.raises(ApiError) as info:
        store.create("pods", "default", _pod("p"))
    assert info.value.code == 409


def test_selectors(store):
    store.create("pods", "default", _pod("a", node="n1"))
    store.create("pods", "kube-system", _pod("b", node="n2"))
    assert _names(store.list("pods", None, "spec.nodeName=n1")) == ["a"]
    assert _names(store.list("pods", None, "spec.nodeName!=n1")) == ["b"]
    assert _names(store.list("pods", "kube-system")) == ["b"]
    store.patch("pods", "default", "a", {"metadata": {"labels": {"app": "web", "tier": "x"}}}, SMP)
    assert _names(store.list("pods", None, label_selector="app=web")) == ["a"]
    assert _names(store.list("pods", None, label_selector="app!=web")) == ["b"]
    assert _names(store.list("pods", None, label_selector="tier in (x, y),!gone")) == ["a"]
    with pytest.raises(ApiError, match="field label not supported"):
        store.list("pods", None, "spec.hostname=n1")


def test_eviction_refused_by_budget_then_graceful_delete(store):
    store.create("pods", "default", _pod("p", annotations={REFUSE_EVICTIONS: "2"}))
    body = {"metadata": {"name": "p", "namespace": "default"}, "deleteOptions": {"gracePeriodSeconds": 5}}
    for attempt in (1, 2):
        with pytest.raises(ApiError) as info:
            store.evict("default", "p", body)
        assert (info.value.code, info.value.reason, attempt) == (429, "TooManyRequests", attempt)
    store.evict("default", "p", body)
    pod = store.get("pods", "default", "p")
    assert pod["metadata"]["deletionGracePeriodSeconds"] == 5  # terminating, still listed
    store.clock_ref.now += 2.1  # min(grace 5 s, termination_seconds 2 s) later
    with pytest.raises(ApiError):
        store.get("pods", "default", "p")


def test_eviction_body_must_be_an_eviction(store):
    store.create("pods", "default", _pod("p"))
    with pytest.raises(ApiError) as info:
        store.evict("default", "p", {"apiVersion": "v1", "kind": "Pod"})
    assert info.value.code == 400


def test_zero_grace_delete_is_immediate(store):
    store.create("pods", "default", _pod("p"))
    store.delete("default", "p", 0)
    assert store.list("pods", "default")["items"] == []


def test_new_nodes_are_ready_and_pods_bound_are_running(store):
    node = store.get("nodes", None, "n1")
    assert node["status"]["conditions"][0]["type"] == "Ready"
    assert store.create("pods", "default", _pod("p"))["status"]["phase"] == "Running"


def test_unknown_and_null_taint_fields_are_dropped_with_a_warning(store):
    # kubernetes.core.k8s_taint sends existing taints back as the Python client's to_dict().
    sent = {"spec": {"taints": [{"key": "t", "effect": "NoSchedule", "time_added": None, "value": None}]}}
    node = store.patch("nodes", None, "n1", sent, SMP)
    assert node["spec"]["taints"] == [{"key": "t", "effect": "NoSchedule"}]
    assert store.warnings == ['unknown field "spec.taints[0].time_added"']
    with pytest.raises(ApiError) as info:
        store.patch("nodes", None, "n1", sent, SMP, strict=True)
    assert info.value.code == 400 and "strict decoding error" in info.value.message
