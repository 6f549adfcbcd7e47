"""Patch semantics of the lab's Kubernetes API simulation (lab/k8s/sim_patch.py): pure functions."""
import pytest

from lab.k8s.sim_patch import PatchError, apply_patch, json_patch, merge_patch, strategic_merge

NODE = {"kind": "Node", "metadata": {"name": "n1", "labels": {"a": "1", "b": "2"}, "finalizers": ["x"]},
        "spec": {"taints": [{"key": "t1", "effect": "NoSchedule"}, {"key": "t2", "effect": "NoExecute"}]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "DiskPressure", "status": "False"}]}}


@pytest.mark.parametrize("patch, path, expected", [
    ({"metadata": {"labels": {"c": "3"}}}, ("metadata", "labels"), {"a": "1", "b": "2", "c": "3"}),
    ({"metadata": {"labels": {"a": None}}}, ("metadata", "labels"), {"b": "2"}),
    # spec.taints has no patch merge key: the list is replaced (what k8s_taint relies on).
    ({"spec": {"taints": [{"key": "t3", "effect": "NoSchedule"}]}}, ("spec", "taints"),
     [{"key": "t3", "effect": "NoSchedule"}]),
    ({"spec": {"taints": []}}, ("spec", "taints"), []),
    ({"spec": {"unschedulable": True}}, ("spec", "unschedulable"), True),
    # status.conditions merges by "type".
    ({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}, ("status", "conditions"),
     [{"type": "Ready", "status": "False"}, {"type": "DiskPressure", "status": "False"}]),
    ({"status": {"conditions": [{"type": "DiskPressure", "$patch": "delete"}]}}, ("status", "conditions"),
     [{"type": "Ready", "status": "True"}]),
    ({"metadata": {"finalizers": ["y", "x"]}}, ("metadata", "finalizers"), ["x", "y"]),
    ({"metadata": {"labels": {"$patch": "replace", "z": "9"}}}, ("metadata", "labels"), {"z": "9"}),
])
def test_strategic_merge(patch, path, expected):
    result = strategic_merge(NODE, patch)
    for key in path:
        result = result[key]
    assert result == expected


def test_strategic_merge_does_not_mutate_its_input():
    before = repr(NODE)
    strategic_merge(NODE, {"metadata": {"labels": {"a": None}}, "spec": {"taints": []}})
    assert repr(NODE) == before


def test_strategic_merge_refuses_unknown_directives():
    with pytest.raises(PatchError, match="setElementOrder"):
        strategic_merge(NODE, {"spec": {"$setElementOrder/taints": [{"key": "t1"}]}})


def test_merge_patch_replaces_lists_and_deletes_nulls():
    result = merge_patch(NODE, {"status": {"conditions": [{"type": "Ready", "status": "False"}]},
                                "metadata": {"labels": {"b": None}}})
    assert result["status"]["conditions"] == [{"type": "Ready", "status": "False"}]
    assert result["metadata"]["labels"] == {"a": "1"}


@pytest.mark.parametrize("ops, check", [
    ([{"op": "add", "path": "/spec/taints/-", "value": {"key": "t3", "effect": "NoSchedule"}}],
     lambda r: [t["key"] for t in r["spec"]["taints"]] == ["t1", "t2", "t3"]),
    ([{"op": "remove", "path": "/spec/taints/0"}], lambda r: [t["key"] for t in r["spec"]["taints"]] == ["t2"]),
    ([{"op": "replace", "path": "/metadata/labels/a", "value": "x"}], lambda r: r["metadata"]["labels"]["a"] == "x"),
    ([{"op": "add", "path": "/metadata/labels/gpufleet.io~1sku", "value": "h100"}],
     lambda r: r["metadata"]["labels"]["gpufleet.io/sku"] == "h100"),
    ([{"op": "copy", "from": "/metadata/labels/a", "path": "/metadata/labels/c"}],
     lambda r: r["metadata"]["labels"]["c"] == "1"),
    ([{"op": "move", "from": "/metadata/labels/a", "path": "/metadata/labels/d"}],
     lambda r: "a" not in r["metadata"]["labels"] and r["metadata"]["labels"]["d"] == "1"),
    ([{"op": "test", "path": "/metadata/name", "value": "n1"}, {"op": "remove", "path": "/metadata/labels"}],
     lambda r: "labels" not in r["metadata"]),
])
def test_json_patch(ops, check):
    assert check(json_patch(NODE, ops))


@pytest.mark.parametrize("ops, status", [
    ([{"op": "test", "path": "/metadata/name", "value": "other"}], 422),
    ([{"op": "remove", "path": "/spec/missing"}], 400),
    ([{"op": "replace", "path": "/spec/taints/5", "value": {}}], 400),
    ([{"op": "frobnicate", "path": "/spec"}], 400),
    ({"op": "add"}, 400),
])
def test_json_patch_failures(ops, status):
    with pytest.raises(PatchError) as info:
        json_patch(NODE, ops)
    assert info.value.status == status


def test_json_patch_is_all_or_nothing():
    with pytest.raises(PatchError):
        json_patch(NODE, [{"op": "remove", "path": "/metadata/labels/a"}, {"op": "remove", "path": "/nope"}])
    assert NODE["metadata"]["labels"]["a"] == "1"


@pytest.mark.parametrize("content_type, body, expect_taints", [
    ("application/strategic-merge-patch+json", {"spec": {"taints": []}}, []),
    ("application/merge-patch+json; charset=utf-8", {"spec": {"taints": []}}, []),
    ("application/json-patch+json", [{"op": "remove", "path": "/spec/taints"}], None),
])
def test_apply_patch_dispatches_on_content_type(content_type, body, expect_taints):
    assert apply_patch(NODE, body, content_type)["spec"].get("taints") == expect_taints


def test_apply_patch_refuses_other_media_types():
    with pytest.raises(PatchError) as info:
        apply_patch(NODE, {}, "application/json")
    assert info.value.status == 415
