"""Lifecycle states are named through the collection's constants in the controller package.

``ready`` compared with a node's state is a typo waiting to happen (``"ready "``, ``"break-fix"``)
that no test catches; ``states.READY`` fails at import. An ast scan of controller/gpufleet finds
a quoted state name where it is used as a state: compared with something named ``*state*``
(``==``, ``in`` a literal), a dict literal keyed only by state names (a table), a tuple, list or
set literal of only state names assigned to a name, or a dict literal looked up with a state.
"""
import ast
import os

import pytest

import gpufleet  # noqa: F401  (the collection loader)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import states
from tests.helpers import ROOT
from tests.unit.architecture.test_import_rules import _python_files

STATE_NAMES = frozenset(states.STATES)


def _quoted(node):
    """The string constants of ``node`` (or of its literal's elements) that are state names."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in STATE_NAMES:
        yield node
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for element in node.elts:
            yield from _quoted(element)


def _names_a_state(node):
    """``state``, ``x.to_state``, ``row["from_state"]``, ``row.get("state")``."""
    if isinstance(node, ast.Name):
        return "state" in node.id.lower()
    if isinstance(node, ast.Attribute):
        return "state" in node.attr.lower()
    key = None
    if isinstance(node, ast.Subscript):
        key = node.slice
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
        key = node.args[0]
    return isinstance(key, ast.Constant) and isinstance(key.value, str) and "state" in key.value.lower()


def _all_states(elements):
    values = [e.value if isinstance(e, ast.Constant) else None for e in elements]
    return len(values) >= 2 and all(isinstance(v, str) and v in STATE_NAMES for v in values)


def quoted_states(source):
    """[(line, name)] of quoted state names used as states in ``source``."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        hits = []
        if isinstance(node, ast.Compare):
            operands = [node.left] + node.comparators
            if any(_names_a_state(o) for o in operands):
                for operand in operands:
                    hits.extend(_quoted(operand))
        elif isinstance(node, ast.Dict) and _all_states([k for k in node.keys if k is not None]):
            hits.extend(k for k in node.keys if k is not None)
        elif (isinstance(node, ast.Assign) and isinstance(node.value, (ast.Tuple, ast.List, ast.Set))
              and _all_states(node.value.elts)):
            hits.extend(node.value.elts)  # a named set of states, e.g. IN_SERVICE = ("joined", "hot")
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Dict) and _names_a_state(node.slice):
            hits.extend(h for k in node.value.keys if k is not None for h in _quoted(k))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and isinstance(node.func.value, ast.Dict) and node.args and _names_a_state(node.args[0])):
            hits.extend(h for k in node.func.value.keys if k is not None for h in _quoted(k))
        found.update((h.lineno, h.value) for h in hits)
    return sorted(found)


def test_the_controller_package_names_states_through_the_constants():
    files = [p for p in _python_files("controller/gpufleet") if p.endswith(".py")]
    assert any(p.endswith("controller/supply.py") for p in files)  # the walk sees the package
    bad = []
    for path in files:
        with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
            bad.extend("%s:%d %r" % (path, line, name) for line, name in quoted_states(handle.read()))
    assert not bad, "use the constants of plugins/module_utils/lifecycle/states.py:\n" + "\n".join(bad)


@pytest.mark.parametrize("source, expected", [
    ('if record["state"] == "ready":\n    pass\n', [(1, "ready")]),
    ('if step.get("to_state") in ("hot", "joined"):\n    pass\n', [(1, "hot"), (1, "joined")]),
    ('TIERS = {"enrolled": 1, "parked": 2}\n', [(1, "enrolled"), (1, "parked")]),
    ('DONE = ("failed", "break_fix")\n', [(1, "break_fix"), (1, "failed")]),
    ('step = {"parked": "wake"}.get(state)\n', [(1, "parked")]),
])
def test_the_scan_finds_a_quoted_state_used_as_a_state(source, expected):
    assert quoted_states(source) == expected


@pytest.mark.parametrize("source", [
    'if action.kind == "break_fix":\n    pass\n',         # an action kind that shares the name
    'if state == states.READY:\n    pass\n',
    'TIERS = {"hot": 1, "warm": 2}\n',                     # tiers, not all of them states
    'STACK = (("idle", "idle"), ("hot", "hot"))\n',        # plot labels that share a name
    'print("node is failed")\n',
])
def test_the_scan_leaves_other_strings_alone(source):
    assert quoted_states(source) == []
