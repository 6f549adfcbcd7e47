"""Policy errors in words: the field path, what is wrong, and the fix.

pydantic reports a location and a terse message per error; this turns each into one line
``pools.a100.floors.hot: must be 0 or more (got -1); fix: ...`` and, for an unknown key,
lists the keys allowed at that place.
"""
import typing

from pydantic import BaseModel

__all__ = ["PolicyError", "explain"]


class PolicyError(ValueError):
    """A policy file was refused. ``problems``: one line per bad field; nothing was applied."""

    def __init__(self, source, problems):
        self.source = source
        self.problems = list(problems)
        head = f"capacity policy {source} refused ({len(self.problems)} problem(s)); " \
               "nothing was applied:"
        super().__init__("\n  ".join([head] + self.problems))


# Fixes for pydantic's own error types; our validators write their fix into the message.
_FIXES = {
    "missing": "add it (see docs/capacity.md, Policy)",
    "int_type": "write a whole number without quotes",
    "int_parsing": "write a whole number without quotes",
    "int_from_float": "write a whole number",
    "float_type": "write a number",
    "float_parsing": "write a number",
    "bool_type": "write true or false",
    "bool_parsing": "write true or false",
    "string_type": "write a string",
    "greater_than_equal": "raise it to the minimum",
    "greater_than": "raise it above the minimum",
    "less_than_equal": "lower it to the maximum",
    "less_than": "lower it below the maximum",
    "literal_error": "use one of the values listed",
    "dict_type": "write a mapping (key: value lines)",
    "tuple_type": "write a list",
    "list_type": "write a list",
    "model_type": "write a mapping (key: value lines)",
}


# pydantic's words for Python types; a policy author writes YAML lists and mappings.
_MESSAGES = {
    "tuple_type": "must be a list",
    "list_type": "must be a list",
    "model_type": "must be a mapping",
    "dict_type": "must be a mapping",
}


def _path(loc):
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _model_at(model, loc):
    """The model class that holds the key at ``loc`` (to list allowed keys), or None."""
    current = model
    for part in loc[:-1]:
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(part)
            if field is None:
                return None
            current = field.annotation
        else:
            current = _inner(current)
    while not (isinstance(current, type) and issubclass(current, BaseModel)):
        nxt = _inner(current)
        if nxt is current:
            return None
        current = nxt
    return current


def _inner(annotation):
    """Dict[str, X] -> X, Tuple[X, ...] -> X, Optional[X] -> X; anything else unchanged."""
    args = [a for a in typing.get_args(annotation) if a is not type(None) and a is not Ellipsis]
    return args[-1] if args else annotation


def _line(error, model):
    loc = error["loc"]
    message = _MESSAGES.get(error["type"], error["msg"].removeprefix("Value error, "))
    kind = error["type"]
    if kind == "extra_forbidden":
        holder = _model_at(model, loc)
        allowed = ", ".join(holder.model_fields) if holder else "see docs/capacity.md"
        return f"{_path(loc)}: unknown key; fix: remove or rename it (allowed here: {allowed})"
    if kind == "value_error":
        return f"{_path(loc)}: {message}"
    got = error.get("input")
    shown = "" if isinstance(got, (dict, list)) or kind == "missing" else f" (got {got!r:.60})"
    fix = _FIXES.get(kind, "see docs/capacity.md, Policy")
    return f"{_path(loc)}: {message}{shown}; fix: {fix}"


def explain(exc, model):
    """pydantic ValidationError -> sorted lines (stable order for tests and logs)."""
    return sorted({_line(error, model) for error in exc.errors()})
