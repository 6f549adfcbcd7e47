"""LAB SIMULATION ONLY: the three patch formats the Kubernetes API accepts, as pure functions.

Part of the Kubernetes API simulation in ``lab/k8s`` (see docs/roles-kubernetes.md); never used
by production code. Implements what kubernetes.core and the Python client send:

- ``application/strategic-merge-patch+json``: maps merge recursively, ``null`` deletes a key,
  lists are replaced unless the field has a patch merge key in ``MERGE_KEYS`` (as the Go types'
  ``patchStrategy:"merge"`` tags say; ``spec.taints`` has none, so a taint patch replaces the
  whole list). Directives: ``$patch: replace|delete`` in a map; any other ``$`` key is refused.
- ``application/merge-patch+json``: RFC 7386.
- ``application/json-patch+json``: RFC 6902 (add, remove, replace, move, copy, test).

Errors raise ``PatchError`` with an HTTP status (400 bad patch, 422 failed ``test``).
"""
import copy

__all__ = ["PatchError", "MERGE_KEYS", "strategic_merge", "merge_patch", "json_patch", "apply_patch",
           "CONTENT_TYPES"]

# (kind, dotted path with [] for list elements) -> merge key; "" = list of primitives merged as a set.
MERGE_KEYS = {
    ("*", "metadata.finalizers"): "",
    ("*", "metadata.ownerReferences"): "uid",
    ("Node", "spec.podCIDRs"): "",
    ("Node", "status.conditions"): "type",
    ("Node", "status.addresses"): "type",
    ("Pod", "spec.containers"): "name",
    ("Pod", "spec.initContainers"): "name",
    ("Pod", "spec.volumes"): "name",
    ("Pod", "spec.containers[].env"): "name",
    ("Pod", "spec.containers[].ports"): "containerPort",
    ("Pod", "status.conditions"): "type",
}


class PatchError(Exception):
    def __init__(self, message, status=400):
        super().__init__(message)
        self.status = status


def _merge_key(kind, path):
    for probe in ((kind, path), ("*", path)):
        if probe in MERGE_KEYS:
            return MERGE_KEYS[probe]
    return None


def _strategic_list(kind, path, current, patch):
    key = _merge_key(kind, path)
    if key is None or not isinstance(current, list):
        return copy.deepcopy(patch)
    if key == "":
        return list(current) + [item for item in patch if item not in current]
    merged = copy.deepcopy(current)
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise PatchError("%s: list element %r has no merge key %r" % (path, item, key))
        if item.get("$patch") == "delete":
            merged = [old for old in merged if old.get(key) != item[key]]
            continue
        for index, old in enumerate(merged):
            if old.get(key) == item[key]:
                merged[index] = _strategic_map(kind, path + "[]", old, item)
                break
        else:
            merged.append(_strategic_map(kind, path + "[]", {}, item))
    return merged


def _strategic_map(kind, path, current, patch):
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    if directive is not None:
        raise PatchError("%s: unknown $patch directive %r" % (path or "(root)", directive))
    result = copy.deepcopy(current) if isinstance(current, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            if key != "$patch":
                raise PatchError("%s: the lab simulation does not implement the %r directive" % (path or "(root)", key))
            continue
        child = "%s.%s" % (path, key) if path else key
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = _strategic_map(kind, child, result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _strategic_list(kind, child, result.get(key), value)
        else:
            result[key] = value
    return result


def strategic_merge(obj, patch, kind=None):
    """Strategic merge ``patch`` (a JSON object) onto ``obj``; returns a new object."""
    if not isinstance(patch, dict):
        raise PatchError("a strategic merge patch must be a JSON object, got %s" % type(patch).__name__)
    return _strategic_map(kind or obj.get("kind"), "", obj, patch)


def merge_patch(obj, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(obj) if isinstance(obj, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError("JSON pointer %r does not start with /" % path)
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _index(container, token, path, allow_end=False):
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit():
        raise PatchError("%s: %r is not a list index" % (path, token))
    index = int(token)
    if index > len(container) or (index == len(container) and not allow_end):
        raise PatchError("%s: index %d out of range" % (path, index))
    return index


def _parent(doc, path):
    tokens = _pointer(path)
    if not tokens:
        raise PatchError("the lab simulation does not patch the document root")
    target = doc
    for token in tokens[:-1]:
        if isinstance(target, list):
            target = target[_index(target, token, path)]
        elif isinstance(target, dict) and token in target:
            target = target[token]
        else:
            raise PatchError("%s: path does not exist" % path)
    return target, tokens[-1]


def _get(doc, path):
    target, last = _parent(doc, path)
    if isinstance(target, list):
        return target[_index(target, last, path)]
    if not isinstance(target, dict) or last not in target:
        raise PatchError("%s: path does not exist" % path)
    return target[last]


def _remove(doc, path):
    target, last = _parent(doc, path)
    if isinstance(target, list):
        return target.pop(_index(target, last, path))
    if not isinstance(target, dict) or last not in target:
        raise PatchError("%s: path does not exist" % path)
    return target.pop(last)


def _add(doc, path, value, replace=False):
    target, last = _parent(doc, path)
    if isinstance(target, list):
        index = _index(target, last, path, allow_end=not replace)
        if replace:
            target[index] = value
        else:
            target.insert(index, value)
    elif isinstance(target, dict):
        if replace and last not in target:
            raise PatchError("%s: path does not exist" % path)
        target[last] = value
    else:
        raise PatchError("%s: parent is not an object or a list" % path)


def _json_op(doc, op):
    name, path = op.get("op"), op.get("path")
    if not isinstance(path, str):
        raise PatchError("JSON patch operation %r has no path" % op)
    if name in ("add", "replace", "test") and "value" not in op:
        raise PatchError("JSON patch operation %r has no value" % op)
    if name == "add":
        _add(doc, path, copy.deepcopy(op["value"]))
    elif name == "replace":
        _add(doc, path, copy.deepcopy(op["value"]), replace=True)
    elif name == "remove":
        _remove(doc, path)
    elif name in ("move", "copy"):
        source = op.get("from")
        value = _remove(doc, source) if name == "move" else copy.deepcopy(_get(doc, source))
        _add(doc, path, value)
    elif name == "test":
        if _get(doc, path) != op["value"]:
            raise PatchError("test operation failed at %s" % path, status=422)
    else:
        raise PatchError("unknown JSON patch operation %r" % name)


def json_patch(obj, operations):
    """RFC 6902 JSON patch; the whole list applies or nothing does."""
    if not isinstance(operations, list):
        raise PatchError("a JSON patch must be a list of operations")
    doc = copy.deepcopy(obj)
    for op in operations:
        if not isinstance(op, dict):
            raise PatchError("JSON patch operation %r is not an object" % (op,))
        _json_op(doc, op)
    return doc


CONTENT_TYPES = ("application/strategic-merge-patch+json", "application/merge-patch+json",
                 "application/json-patch+json")


def apply_patch(obj, patch, content_type):
    """Dispatch on the request's Content-Type (parameters such as ``; charset`` ignored)."""
    media = (content_type or "").split(";")[0].strip().lower()
    if media == CONTENT_TYPES[0]:
        return strategic_merge(obj, patch)
    if media == CONTENT_TYPES[1]:
        return merge_patch(obj, patch)
    if media == CONTENT_TYPES[2]:
        return json_patch(obj, patch)
    raise PatchError("the body of the request was in an unknown format - accepted media types include: "
                     + ", ".join(CONTENT_TYPES), status=415)
