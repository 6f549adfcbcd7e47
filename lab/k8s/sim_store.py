"""LAB SIMULATION ONLY: the object store behind lab/k8s/apiserver_sim.py.

Nodes, Pods, Namespaces and ConfigMaps in memory, with what the API server would do on each
write: uid, creationTimestamp, a cluster-wide ``resourceVersion`` bumped only when an object
really changed, optimistic-concurrency checks, label/taint validation, field and label
selectors, evictions with a disruption-budget stand-in, and graceful pod termination (a pod
with a ``deletionTimestamp`` disappears ``termination_seconds`` later, as if its kubelet had
stopped it). No threads: expired pods are purged on the next access. Never used by
production code.
"""
import copy
import datetime
import re
import time
import uuid

try:  # as lab.k8s on the controller (tests)
    from lab.k8s.sim_patch import PatchError, apply_patch
except ImportError:  # as a script's sibling in the simulation container (folder mounted alone)
    from sim_patch import PatchError, apply_patch

__all__ = ["ApiError", "Store", "REFUSE_EVICTIONS", "prune_unknown", "validate"]

# Pod annotation: refuse this many evictions with 429 (as a PodDisruptionBudget would) before
# allowing one. Lab-only stand-in for PDB objects, which the simulation does not implement.
REFUSE_EVICTIONS = "sim.gpufleet.io/refuse-evictions"

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_LABEL_NAME = re.compile(r"^%s$" % _NAME)
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_RESOURCES = {"nodes": "Node", "pods": "Pod", "namespaces": "Namespace", "configmaps": "ConfigMap"}
_SELECTABLE = {"Pod": ("metadata.name", "metadata.namespace", "spec.nodeName", "status.phase"),
               "Node": ("metadata.name", "spec.unschedulable")}


class ApiError(Exception):
    """A failure the simulated API answers with a Status object."""

    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details or {}

    def status(self):
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "details": self.details, "code": self.code}


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _invalid(kind, name, field, value, why):
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s: Invalid value: %r: %s' % (kind, name, field, value, why),
                    {"name": name, "kind": kind, "causes": [{"reason": "FieldValueInvalid", "field": field,
                                                             "message": why}]})


def _check_label_key(kind, name, field, key):
    prefix, _, local = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        raise _invalid(kind, name, field, key, "prefix part must be a lowercase RFC 1123 subdomain")
    if len(local) > 63 or not _LABEL_NAME.match(local):
        raise _invalid(kind, name, field, key, "name part must consist of alphanumeric characters, '-', '_' or "
                                               "'.', and must start and end with an alphanumeric character")


def _check_string_map(kind, name, field, value, values_are_labels):
    if not isinstance(value, dict):
        raise ApiError(400, "BadRequest", "json: cannot unmarshal %s into Go struct field ObjectMeta.%s of type "
                                          "map[string]string" % (type(value).__name__, field))
    for key, item in value.items():
        if not isinstance(item, str):
            raise ApiError(400, "BadRequest", "json: cannot unmarshal %s into Go struct field ObjectMeta.%s of "
                                              "type string" % (type(item).__name__, field))
        _check_label_key(kind, name, field, key)
        if values_are_labels and item and (len(item) > 63 or not _LABEL_NAME.match(item)):
            raise _invalid(kind, name, "%s[%s]" % (field, key), item, "a valid label value must be 63 characters "
                                                                      "or less, alphanumeric, '-', '_' or '.'")


def _check_taints(name, taints):
    if not isinstance(taints, list):
        raise ApiError(400, "BadRequest", "json: cannot unmarshal into Go struct field NodeSpec.spec.taints of "
                                          "type []v1.Taint")
    seen = set()
    for index, taint in enumerate(taints):
        field = "spec.taints[%d]" % index
        if not isinstance(taint, dict) or not taint.get("key"):
            raise _invalid("Node", name, field + ".key", taint, "a taint needs a key")
        _check_label_key("Node", name, field + ".key", taint["key"])
        if taint.get("effect") not in _EFFECTS:
            raise _invalid("Node", name, field + ".effect", taint.get("effect"),
                           "supported values: " + ", ".join('"%s"' % e for e in _EFFECTS))
        if (taint["key"], taint["effect"]) in seen:
            raise _invalid("Node", name, "spec.taints", taint, "taints must be unique by key and effect pair")
        seen.add((taint["key"], taint["effect"]))


_TAINT_FIELDS = ("key", "value", "effect", "timeAdded")


def prune_unknown(obj, strict=False):
    """Drop unknown and null taint fields as the API server's decoder does; return the warnings.

    kubernetes.core.k8s_taint sends existing taints back in the Python client's snake_case
    (``time_added: null``). The API server drops unknown fields (a Warning header; a 400 with
    ``fieldValidation=Strict``) and omits nulls; modelled for Node taints only.
    """
    warnings = []
    for index, taint in enumerate(((obj.get("spec") or {}).get("taints") or []) if obj.get("kind") == "Node" else []):
        if not isinstance(taint, dict):
            continue
        for field in [f for f in taint if f not in _TAINT_FIELDS]:
            warnings.append('unknown field "spec.taints[%d].%s"' % (index, field))
            del taint[field]
        for field in [f for f, v in taint.items() if v is None]:
            del taint[field]
    if warnings and strict:
        raise ApiError(400, "BadRequest", 'Node in version "v1" cannot be handled as a Node: strict decoding '
                                          "error: " + ", ".join(warnings))
    return warnings


def validate(obj):
    kind, meta = obj.get("kind"), obj.get("metadata") or {}
    name = meta.get("name") or ""
    if not _DNS_SUBDOMAIN.match(name) or len(name) > 253:
        raise _invalid(kind, name, "metadata.name", name, "a lowercase RFC 1123 subdomain must consist of lower "
                                                          "case alphanumeric characters, '-' or '.'")
    _check_string_map(kind, name, "metadata.labels", meta.get("labels") or {}, True)
    _check_string_map(kind, name, "metadata.annotations", meta.get("annotations") or {}, False)
    spec = obj.get("spec") or {}
    if kind == "Node":
        _check_taints(name, spec.get("taints") or [])
        if not isinstance(spec.get("unschedulable", False), bool):
            raise ApiError(400, "BadRequest", "json: cannot unmarshal into Go struct field NodeSpec.spec."
                                              "unschedulable of type bool")
    if kind == "Pod" and not spec.get("containers"):
        raise _invalid("Pod", name, "spec.containers", [], "Required value")


def _field(obj, dotted):
    value = obj
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def parse_field_selector(kind, text):
    terms = []
    for term in filter(None, (text or "").split(",")):
        match = re.match(r"^([A-Za-z.]+)(==|!=|=)(.*)$", term)
        if not match:
            raise ApiError(400, "BadRequest", 'invalid field selector: "%s"' % term)
        if match.group(1) not in _SELECTABLE.get(kind, ()):
            raise ApiError(400, "BadRequest", 'field label not supported: %s' % match.group(1))
        terms.append((match.group(1), match.group(2) != "!=", match.group(3)))
    return lambda obj: all((_field(obj, f) == v) == eq for f, eq, v in terms)


def parse_label_selector(text):
    terms = []
    for term in re.findall(r"(?:[^,(]|\([^)]*\))+", text or ""):
        term = term.strip()
        match = re.match(r"^(\S+?)\s+(in|notin)\s+\(([^)]*)\)$", term)
        if match:
            values = {v.strip() for v in match.group(3).split(",")}
            terms.append((match.group(1), match.group(2), values))
            continue
        match = re.match(r"^(!?)([^!=\s]+)(?:\s*(==|!=|=)\s*(\S*))?$", term)
        if not match or (match.group(1) and match.group(3)):
            raise ApiError(400, "BadRequest", 'unable to parse requirement: "%s"' % term)
        if match.group(3):
            terms.append((match.group(2), "notin" if match.group(3) == "!=" else "in", {match.group(4)}))
        else:
            terms.append((match.group(2), "!exists" if match.group(1) else "exists", None))
    return lambda labels: all(_label_match(labels, *t) for t in terms)


def _label_match(labels, key, op, values):
    if op == "exists":
        return key in labels
    if op == "!exists":
        return key not in labels
    if op == "in":
        return labels.get(key) in values
    return key not in labels or labels[key] not in values


class Store:
    """Objects keyed by (kind, namespace, name); every method holds no lock (the server does)."""

    def __init__(self, termination_seconds=2.0, clock=time.monotonic):
        self.objects = {}
        self.version = 100
        self.termination_seconds = termination_seconds
        self.clock = clock
        self._delete_at = {}
        self._refusals = {}
        self.warnings = []  # of the last write; the server sends them as Warning headers
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.create("namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    @staticmethod
    def kind_of(resource):
        if resource not in _RESOURCES:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return _RESOURCES[resource]

    def _bump(self):
        self.version += 1
        return str(self.version)

    def purge(self):
        now = self.clock()
        for key, when in list(self._delete_at.items()):
            if when <= now:
                self.objects.pop(key, None)
                del self._delete_at[key]

    def get(self, resource, namespace, name):
        self.purge()
        kind = self.kind_of(resource)
        obj = self.objects.get((kind, namespace, name))
        if obj is None:
            raise ApiError(404, "NotFound", '%s "%s" not found' % (resource, name), {"name": name, "kind": resource})
        return copy.deepcopy(obj)

    def list(self, resource, namespace=None, field_selector="", label_selector=""):
        self.purge()
        kind = self.kind_of(resource)
        by_field, by_label = parse_field_selector(kind, field_selector), parse_label_selector(label_selector)
        items = [copy.deepcopy(o) for (k, ns, _), o in sorted(self.objects.items())
                 if k == kind and (namespace is None or ns == namespace)
                 and by_field(o) and by_label((o.get("metadata") or {}).get("labels") or {})]
        return {"kind": kind + "List", "apiVersion": "v1", "metadata": {"resourceVersion": str(self.version)},
                "items": items}

    def _prepare_new(self, kind, namespace, body):
        obj = copy.deepcopy(body)
        obj["kind"], obj["apiVersion"] = kind, "v1"
        meta = obj.setdefault("metadata", {})
        if namespace is not None:
            if meta.get("namespace") not in (None, namespace):
                raise ApiError(400, "BadRequest", "the namespace of the provided object does not match the "
                                                  "namespace sent on the request")
            meta["namespace"] = namespace
            if ("Namespace", None, namespace) not in self.objects:
                raise ApiError(404, "NotFound", 'namespaces "%s" not found' % namespace,
                               {"name": namespace, "kind": "namespaces"})
        meta.update(uid=str(uuid.uuid4()), creationTimestamp=_now())
        for server_side in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(server_side, None)
        if kind == "Node":
            obj.setdefault("spec", {})
            obj["status"] = {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                             "message": "lab simulation: no kubelet, always Ready"}]}
        if kind == "Pod":
            obj["status"] = {"phase": "Running" if (obj.get("spec") or {}).get("nodeName") else "Pending"}
        return obj

    def create(self, resource, namespace, body, dry_run=False, strict=False):
        self.purge()
        kind = self.kind_of(resource)
        if not isinstance(body, dict) or body.get("kind") not in (None, kind):
            raise ApiError(400, "BadRequest", "the body of the request does not contain a %s" % kind)
        obj = self._prepare_new(kind, namespace, body)
        self.warnings = prune_unknown(obj, strict)
        validate(obj)
        key = (kind, namespace, obj["metadata"]["name"])
        if key in self.objects:
            raise ApiError(409, "AlreadyExists", '%s "%s" already exists' % (resource, key[2]),
                           {"name": key[2], "kind": resource})
        if not dry_run:
            obj["metadata"]["resourceVersion"] = self._bump()
            self.objects[key] = obj
        return copy.deepcopy(obj)

    def patch(self, resource, namespace, name, body, content_type, dry_run=False, strict=False):
        current = self.get(resource, namespace, name)
        try:
            patched = apply_patch(current, body, content_type)
        except PatchError as exc:
            reason = {415: "UnsupportedMediaType", 422: "Invalid"}.get(exc.status, "BadRequest")
            raise ApiError(exc.status, reason, str(exc)) from exc
        meta = patched.get("metadata") or {}
        wanted_rv = meta.get("resourceVersion")
        if wanted_rv is not None and wanted_rv != current["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": the object has been '
                                            'modified; please apply your changes to the latest version and try '
                                            'again' % (resource, name), {"name": name, "kind": resource})
        for fixed in ("name", "namespace", "uid", "creationTimestamp"):
            if meta.get(fixed) != current["metadata"].get(fixed):
                raise _invalid(current["kind"], name, "metadata." + fixed, meta.get(fixed), "field is immutable")
        patched["kind"], patched["apiVersion"] = current["kind"], current["apiVersion"]
        self.warnings = prune_unknown(patched, strict)
        validate(patched)
        meta["resourceVersion"] = current["metadata"]["resourceVersion"]
        if patched != current and not dry_run:
            meta["resourceVersion"] = self._bump()
            self.objects[(current["kind"], namespace, name)] = patched
        return copy.deepcopy(patched)

    def delete(self, namespace, name, grace_seconds=None, dry_run=False):
        """Delete a pod gracefully: it keeps running, marked, until its grace period ends."""
        pod = self.get("pods", namespace, name)
        if grace_seconds is None:
            grace_seconds = (pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
        if dry_run:
            return pod
        key = ("Pod", namespace, name)
        if grace_seconds <= 0:
            self.objects.pop(key, None)
            self._delete_at.pop(key, None)
            return pod
        if key not in self._delete_at:
            meta = self.objects[key]["metadata"]
            meta.update(deletionTimestamp=_now(), deletionGracePeriodSeconds=grace_seconds,
                        resourceVersion=self._bump())
            self._delete_at[key] = self.clock() + min(float(grace_seconds), self.termination_seconds)
        return copy.deepcopy(self.objects[key])

    def evict(self, namespace, name, body, dry_run=False):
        """policy/v1 Eviction: 429 while the pod's refuse-evictions budget lasts, then a graceful delete."""
        pod = self.get("pods", namespace, name)
        if not isinstance(body, dict) or body.get("apiVersion") not in (None, "policy/v1", "policy/v1beta1") \
                or body.get("kind") not in (None, "Eviction"):
            raise ApiError(400, "BadRequest", "the body of the request is not a policy/v1 Eviction")
        if ((body.get("metadata") or {}).get("name") or name) != name:
            raise ApiError(400, "BadRequest", "name in URL does not match name in Eviction object")
        key = (namespace, name)
        budget = int(((pod["metadata"].get("annotations") or {}).get(REFUSE_EVICTIONS)) or 0)
        if self._refusals.get(key, 0) < budget:
            if not dry_run:
                self._refusals[key] = self._refusals.get(key, 0) + 1
            raise ApiError(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption "
                                                   "budget.", {"causes": [{"reason": "DisruptionBudget",
                                                                           "message": "lab simulation: %s" %
                                                                           REFUSE_EVICTIONS}]})
        grace = (body.get("deleteOptions") or {}).get("gracePeriodSeconds")
        self.delete(namespace, name, grace, dry_run=dry_run)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
