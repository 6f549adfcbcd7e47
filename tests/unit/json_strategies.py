"""Hypothesis strategies for JSON-shaped garbage, shared by the property tests."""
import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# Inputs per property; GPUFLEET_HYPOTHESIS_EXAMPLES raises it for a longer hunt.
EXAMPLES = int(os.environ.get("GPUFLEET_HYPOTHESIS_EXAMPLES", "300"))

# No deadline (the machine is shared: time is never asserted) and no example database
# (nothing written into the checkout); derandomized, so every run replays the same inputs.
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

SCALARS = (st.none() | st.booleans() | st.integers(-2 ** 40, 2 ** 40)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12))

JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


def of_kind(kind):
    """Valid values of one field kind (text, flag, number, integer, object, list)."""
    return {
        "text": st.text(max_size=12), "flag": st.booleans(),
        "number": st.integers(0, 10 ** 6) | st.floats(0, 1e6), "integer": st.integers(0, 4096),
        "object": st.dictionaries(st.text(max_size=8), SCALARS, max_size=3),
        "list": st.lists(st.text(max_size=8), max_size=3),
    }[kind]


def is_kind(value, kind):
    """The oracle: does ``value`` have ``kind``? (independent of the code under test)."""
    if kind == "text":
        return isinstance(value, str)
    if kind == "flag":
        return isinstance(value, bool)
    if kind in ("number", "integer"):
        ok = (int, float) if kind == "number" else (int,)
        return isinstance(value, ok) and not isinstance(value, bool)
    return isinstance(value, {"object": dict, "list": list}[kind])


def maybe_wrong(kind):
    """A valid value, nothing (absent), or any JSON value at all (often the wrong type)."""
    return st.one_of(of_kind(kind), st.none(), JSON)
