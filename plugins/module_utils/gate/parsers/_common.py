# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Helpers shared by the gate parsers: numbered lines, numbers, JSON after leading noise."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math

from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.errors import ParseError

__all__ = ["numbered_lines", "require_text", "to_float", "to_int", "extract_json", "json_path", "field"]


def require_text(text, tool, expected):
    """Reject empty or non-text output before any parsing (an empty output never passes)."""
    if not isinstance(text, str):
        raise ParseError(tool, expected, why="the output is %s, not text" % type(text).__name__)
    if not text.strip():
        raise ParseError(tool, expected, why="the output is empty")
    return text


def numbered_lines(text):
    """(1-based line number, line without the newline) pairs."""
    return [(i + 1, line.rstrip("\r")) for i, line in enumerate(text.split("\n"))]


def to_float(token, tool, expected, line_no=None, line=None):
    try:
        value = float(token)
    except (TypeError, ValueError):
        raise ParseError(tool, expected, line_no, line, why="%r is not a number" % (token,))
    if math.isnan(value):
        raise ParseError(tool, expected, line_no, line, why="the value is NaN")
    return value


def to_int(token, tool, expected, line_no=None, line=None):
    try:
        return int(str(token).strip())
    except (TypeError, ValueError):
        raise ParseError(tool, expected, line_no, line, why="%r is not a whole number" % (token,))


def extract_json(text, tool, expected="a JSON document"):
    """The first JSON object in ``text``, skipping warning lines printed before it."""
    require_text(text, tool, expected)
    offset = 0
    for line_no, raw in enumerate(text.split("\n"), 1):
        stripped = raw.lstrip()
        if stripped.startswith("{"):
            start = offset + len(raw) - len(stripped)
            try:
                value, _end = json.JSONDecoder().raw_decode(text[start:])
            except ValueError as exc:
                raise ParseError(tool, expected, line_no, raw, why="invalid JSON (%s)" % exc)
            if not isinstance(value, dict):
                raise ParseError(tool, expected, line_no, raw, why="the JSON is not an object")
            return value
        offset += len(raw) + 1
    raise ParseError(tool, expected, 1, text.split("\n")[0], why="no line starts a JSON object")


def json_path(document, path, tool, kind=None):
    """Follow ``path`` (keys and indexes) in ``document``; ParseError naming the path if absent."""
    node = document
    for step in path:
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            raise ParseError(tool, 'the JSON field "%s"' % "/".join(str(s) for s in path),
                             why='"%s" is missing' % step)
    if kind is not None and (not isinstance(node, kind) or isinstance(node, bool)):
        raise ParseError(tool, 'the JSON field "%s" to be %s' % ("/".join(str(s) for s in path), _kind_name(kind)),
                         why="found %r" % (node,))
    return node


def _kind_name(kind):
    names = {dict: "an object", list: "a list", str: "a string"}
    if isinstance(kind, tuple):
        return "a number"
    return names.get(kind, kind.__name__)


def field(obj, key, tool, kind, where):
    """``obj[key]`` of type ``kind``; ParseError naming ``where`` (a JSON path) when absent or wrong."""
    if not isinstance(obj, dict) or key not in obj:
        raise ParseError(tool, 'the JSON field "%s/%s"' % (where, key), why="it is missing")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ParseError(tool, 'the JSON field "%s/%s" to be %s' % (where, key, _kind_name(kind)),
                         why="found %r" % (value,))
    return value
