"""Mutations of a parsed YAML tree for property-based tests of loaders (hypothesis).

``key_paths`` lists every key path of a tree; ``mutate`` replaces the value at one path,
deletes it, or adds an unexpected key beside it; ``VALUES`` draws any YAML-representable value.
"""
import copy

from hypothesis import strategies as st

__all__ = ["VALUES", "key_paths", "mutate", "UNEXPECTED_KEY"]

UNEXPECTED_KEY = "zz_unexpected"
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20),
                    st.dates())
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(st.one_of(st.text(max_size=8), st.integers()),
                                                                      inner, max_size=3)), max_leaves=6)


def key_paths(node, prefix=()):
    """Every key path of a YAML tree (mapping keys and list indexes)."""
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            found += key_paths(value, prefix + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += key_paths(value, prefix + (index,))
    return found


def mutate(data, path, action, value):
    data = copy.deepcopy(data)
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    if action == "delete" and isinstance(parent, dict):
        del parent[last]
    elif action == "add" and isinstance(parent, dict):
        parent[UNEXPECTED_KEY] = value
    else:
        parent[last] = value
    return data


