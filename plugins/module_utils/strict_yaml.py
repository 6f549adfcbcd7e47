# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""One strict YAML reader for every YAML file the project reads.

PyYAML's ``safe_load`` keeps the last of two equal keys without a word, so a gate profile or a
rack description could be loosened or redirected unseen. It also follows aliases without a
bound (a "billion laughs" file costs minutes and gigabytes once something walks the result),
recurses without a bound on deep nesting, and reads a device file such as ``/dev/zero`` for
ever. This reader refuses each of those with a ``StrictYamlError`` that says where and what to
fix. Callers wrap it in their own error type (``ProfileError``, ``RackDescriptionError``...).

Why not a library: ruamel.yaml refuses duplicate keys but bounds neither aliases nor depth,
and is not a dependency of ansible-core; PyYAML is, so this is a thin layer over its loader.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat

try:
    import yaml
except ImportError:  # target hosts receive parsed data and never read YAML; the controller has PyYAML
    yaml = None

from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError

__all__ = ["StrictYamlError", "loads", "load_file", "MAX_BYTES", "MAX_DEPTH", "MAX_NODES"]

# Bounds far above any real file of the project (the largest rack description in inventories/
# is a few KiB; a 10,000-node fleet's description is under 1 MiB).
MAX_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 64
MAX_NODES = 1000000  # scalars + collections after every alias is expanded


class StrictYamlError(GpufleetError):
    """A YAML document that must not be used; ``msg`` names the line and the fix."""

    def __init__(self, source, problem, fix, line=None):
        where = "%s line %d" % (source, line) if line else source
        super(StrictYamlError, self).__init__(
            "%s: %s; fix: %s" % (where, problem, fix), source=source, line=line)
        self.source = source
        self.problem = problem
        self.fix = fix
        self.line = line


_LOADER = []


def _loader_class():
    """A SafeLoader that refuses duplicate keys and nesting deeper than MAX_DEPTH (built once)."""
    if _LOADER:
        return _LOADER[0]
    if yaml is None:
        raise StrictYamlError("<yaml>", "PyYAML is not installed", "install PyYAML (ansible-core requires it)")

    class StrictLoader(yaml.SafeLoader):
        def __init__(self, stream):
            super(StrictLoader, self).__init__(stream)
            self._depth = 0

        def compose_node(self, parent, index):
            self._depth += 1
            try:
                if self._depth > MAX_DEPTH:
                    mark = self.peek_event().start_mark
                    raise yaml.composer.ComposerError(
                        None, None, "nested deeper than %d levels" % MAX_DEPTH, mark)
                return super(StrictLoader, self).compose_node(parent, index)
            finally:
                self._depth -= 1

        def construct_mapping(self, node, deep=False):
            seen = {}
            for key_node, _value_node in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key; the base class names it
                    break
                if first is not None:
                    raise yaml.constructor.ConstructorError(
                        None, None, "key %r appears twice (first on line %d)" % (key, first),
                        key_node.start_mark)
                seen[key] = key_node.start_mark.line + 1
            return super(StrictLoader, self).construct_mapping(node, deep=deep)

    _LOADER.append(StrictLoader)
    return StrictLoader


def _expanded_size(root):
    """Nodes the document has once every alias is expanded (shared nodes counted per use)."""
    sizes = {}
    # Iterative post-order walk; an alias is the same node object reached twice.
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if key in sizes and not done:
            continue
        children = []
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                children.extend((k, v))
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        if not done:
            sizes[key] = None  # in progress: a cycle reached again counts as one node
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
            continue
        total = 1
        for child in children:
            total += sizes.get(id(child)) or 1
            if total > MAX_NODES:
                return total
        sizes[key] = total
    return sizes.get(id(root)) or 1


def _line(exc):
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return mark.line + 1 if mark is not None else None


def loads(text, source="<yaml>"):
    """Parse one YAML document strictly; ``text`` is str or UTF-8 bytes. Empty -> None."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StrictYamlError(source, "not UTF-8 text (byte %d)" % exc.start,
                                  "save the file as UTF-8")
    loader = None
    try:
        loader = _loader_class()(text)  # its reader refuses control characters (NUL...) right here
        node = loader.get_single_node()
        if node is None:
            return None
        size = _expanded_size(node)
        if size > MAX_NODES:
            raise StrictYamlError(source, "expands to more than %d values through its aliases"
                                  % MAX_NODES, "write the values out instead of nesting aliases")
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc)
        if "appears twice" in problem:
            fix = "keep one of the two keys"
        elif "nested deeper" in problem:
            fix = "flatten the document"
        else:
            problem, fix = "not valid YAML: %s" % problem, "correct the YAML syntax there"
        raise StrictYamlError(source, problem, fix, _line(exc))
    except RecursionError:
        raise StrictYamlError(source, "nested too deeply to read", "flatten the document")
    finally:
        if loader is not None:
            loader.dispose()


def load_file(path):
    """Read ``path`` (a regular file of at most MAX_BYTES) and parse it with ``loads``."""
    source = str(path)
    try:
        info = os.stat(path)
    except OSError as exc:
        raise StrictYamlError(source, "cannot read it (%s)" % (exc.strerror or exc),
                              "check the path and its permissions")
    if not stat.S_ISREG(info.st_mode):
        raise StrictYamlError(source, "not a regular file", "pass the path of a YAML file")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise StrictYamlError(source, "cannot read it (%s)" % (exc.strerror or exc),
                              "check the path and its permissions")
    if len(data) > MAX_BYTES:
        raise StrictYamlError(source, "larger than %d MiB" % (MAX_BYTES // (1024 * 1024)),
                              "split the file")
    return loads(data, source)
