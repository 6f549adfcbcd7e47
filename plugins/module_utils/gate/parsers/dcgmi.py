# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Parse ``dcgmi diag -r <level> -j`` JSON from DCGM 3.x and 4.x.

DCGM 3.x: root key ``DCGM GPU Diagnostic``; each result names its GPUs in ``gpu_ids``
(a string) and deployment tests carry one result without GPU. DCGM 4.x: root key
``DCGM Diagnostic``; each result names ``entity_group``/``entity_id``, each test may
carry a ``test_summary``, and ``metadata`` holds the DCGM and driver versions. A
``runtime_error`` (the diagnostic did not run) is a parse failure: nothing was measured.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import dataclasses

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.parsers._common import extract_json, field, json_path

__all__ = ["DiagResult", "DcgmDiag", "parse_dcgmi"]

TOOL = "dcgmi diag"
_ROOTS = {"DCGM GPU Diagnostic": "3.x", "DCGM Diagnostic": "4.x"}
_STATUS = {"pass": "pass", "fail": "fail", "warn": "warn", "warning": "warn", "skip": "skip",
           "skipped": "skip", "not run": "skip", "notrun": "skip"}
_RANK = {"fail": 3, "warn": 2, "pass": 1, "skip": 0}


@dataclasses.dataclass(frozen=True)
class DiagResult:
    """One test result for one entity (``GPU0``) or for the node (entity ``""``)."""

    category: str
    test: str
    entity: str
    status: str
    warnings: tuple = ()


@dataclasses.dataclass(frozen=True)
class DcgmDiag:
    schema: str
    dcgm_version: object
    driver_version: object
    results: tuple

    def statuses(self):
        """Test name -> worst status over its entities (fail > warn > pass > skip)."""
        worst = {}
        for res in self.results:
            if res.test not in worst or _RANK[res.status] > _RANK[worst[res.test]]:
                worst[res.test] = res.status
        return worst

    def failures(self):
        return tuple(r for r in self.results if r.status == "fail")


def parse_dcgmi(text):
    """``dcgmi diag -j`` output -> ``DcgmDiag`` (raises ``ParseError``)."""
    doc = extract_json(text, TOOL, "dcgmi diag -j JSON")
    roots = [key for key in _ROOTS if key in doc]
    if not roots:
        raise ParseError(TOOL, 'a root key "DCGM GPU Diagnostic" (DCGM 3.x) or "DCGM Diagnostic" (DCGM 4.x)',
                         why="found keys: %s" % ", ".join(sorted(doc)) or "none")
    body = doc[roots[0]]
    error = doc.get("runtime_error") or (body.get("runtime_error") if isinstance(body, dict) else None)
    if error:
        raise ParseError(TOOL, "test results", why="the diagnostic did not run: %s" % error)
    categories = json_path(doc, (roots[0], "test_categories"), TOOL, list)
    results = tuple(r for index, cat in enumerate(categories) for r in _category(cat, index, roots[0]))
    if not results:
        raise ParseError(TOOL, "at least one test result", why="test_categories holds no results")
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    version = meta.get("version") or (body.get("version") if isinstance(body, dict) else None)
    return DcgmDiag(schema=_ROOTS[roots[0]], dcgm_version=version,
                    driver_version=meta.get("Driver Version Detected") or doc.get("Driver Version Detected"),
                    results=results)


def _category(category, index, root):
    where = "%s/test_categories/%d" % (root, index)
    name = field(category, "category", TOOL, str, where)
    tests = field(category, "tests", TOOL, list, where)
    out = []
    for number, test in enumerate(tests):
        test_name = field(test, "name", TOOL, str, "%s/tests/%d" % (where, number))
        entries = test.get("results") or []
        if not entries and isinstance(test.get("test_summary"), dict):
            entries = [test["test_summary"]]
        if not entries and test.get("status") is not None:
            entries = [test]
        for entry in entries:
            out.extend(_results(name, test_name, entry))
    return out


def _results(category, test, entry):
    if not isinstance(entry, dict) or "status" not in entry:
        raise ParseError(TOOL, 'a "status" in every result of test "%s"' % test, why="found %r" % (entry,))
    status = _STATUS.get(str(entry["status"]).strip().lower())
    if status is None:
        raise ParseError(TOOL, "a status of Pass, Fail, Warn or Skip for test \"%s\"" % test,
                         why="found %r" % (entry["status"],))
    warnings = tuple(_warning(w) for w in entry.get("warnings") or [])
    return [DiagResult(category=category, test=test, entity=entity, status=status, warnings=warnings)
            for entity in _entities(entry)]


def _entities(entry):
    if "entity_id" in entry:  # DCGM 4.x
        return ["%s%s" % (entry.get("entity_group", "GPU"), entry["entity_id"])]
    ids = entry.get("gpu_ids", entry.get("gpu_id"))  # DCGM 3.x: "0" or "0,1,2"
    if ids is None or str(ids).strip() == "":
        return [""]
    return ["GPU%s" % i.strip() for i in str(ids).split(",") if i.strip()]


def _warning(warning):
    if isinstance(warning, dict):
        text = str(warning.get("warning", ""))
        code = warning.get("error_id")
        return text if code is None else "%s (error_id %s)" % (text, code)
    return str(warning)
