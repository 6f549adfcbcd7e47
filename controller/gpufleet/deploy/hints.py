"""Root-device hints: which disk of a machine receives the image.

Ironic's ``root_device`` hints are the reference (``ironic_python_agent.device_hints``): a disk
must match every hint given; string hints compare exactly by default (``s==``), or with ``<in>``
(substring) and ``<or>`` (any of several); ``size`` is in GiB and takes ``==`` (the default),
``!=``, ``<``, ``<=``, ``>``, ``>=``; ``rotational`` is a boolean. One difference on purpose:
Ironic takes the first of several matching disks, this agent refuses, because on a GPU server
with several NVMe drives "the first" depends on probe order and a wrong pick erases a data disk.
"""
import re

from gpufleet.deploy.errors import DeployError

__all__ = ["STRING_HINTS", "parse_hints", "matches", "pick_disk", "GIB"]

GIB = 1024 ** 3
STRING_HINTS = ("name", "model", "vendor", "serial", "wwn", "wwn_with_extension",
                "wwn_vendor_extension", "hctl", "by_path")
_NUMBER_OPS = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}
_SIZE = re.compile(r"^\s*(==|!=|<=|>=|<|>)?\s*(\d+)\s*$")
_STEP = "root device hints"


def _fail(msg):
    raise DeployError(_STEP, msg)


def _string_hint(name, value):
    """'s== X' | '<in> X' | '<or> X <or> Y' | 'X' -> predicate on the disk's value."""
    if not isinstance(value, str) or not value.strip():
        _fail("hint %r must be a non-empty string, got %r; fix: give the value as lsblk "
              "reports it (e.g. serial: S5GXNX0R123456)" % (name, value))
    text = value.strip()
    if text.startswith("<or>") or " <or> " in text:
        options = [part.strip() for part in text.split("<or>") if part.strip()]
        return lambda actual: actual in options
    if text.startswith("<in>"):
        needle = text[len("<in>"):].strip()
        return lambda actual: needle in actual
    if text.startswith("s=="):
        text = text[len("s=="):].strip()
    return lambda actual: actual == text


def _size_hint(value):
    if isinstance(value, bool):
        _fail("hint 'size' must be a whole number of GiB, got %r; fix: e.g. size: '>= 800'" % value)
    found = _SIZE.match(str(value))
    if not found:
        _fail("hint 'size' must be a whole number of GiB with an optional operator (==, !=, <, "
              "<=, >, >=), got %r; fix: e.g. size: '>= 800'" % (value,))
    op = _NUMBER_OPS[found.group(1) or "=="]
    want = int(found.group(2))
    return lambda disk_bytes: op(disk_bytes // GIB, want)


def _bool_hint(value):
    if isinstance(value, bool):
        return value
    if str(value).strip().lower() in ("true", "1", "yes", "on"):
        return True
    if str(value).strip().lower() in ("false", "0", "no", "off"):
        return False
    return _fail("hint 'rotational' must be true or false, got %r" % (value,))


def parse_hints(hints):
    """Validate a hints mapping; return {name: predicate}. Unknown names are refused."""
    if not isinstance(hints, dict) or not hints:
        _fail("no hints given; fix: set root_device in the node's description (at least one of "
              "serial, wwn, by_path, model, size) so the agent never guesses a disk")
    parsed = {}
    for name, value in hints.items():
        if name in STRING_HINTS:
            parsed[name] = _string_hint(name, value)
        elif name == "size":
            parsed[name] = _size_hint(value)
        elif name == "rotational":
            want = _bool_hint(value)
            parsed[name] = lambda actual, want=want: bool(actual) == want
        else:
            _fail("unknown hint %r; fix: use %s, size or rotational"
                  % (name, ", ".join(STRING_HINTS)))
    return parsed


def matches(disk, parsed):
    """True when the disk (a mapping as ``disks.list_disks`` returns) satisfies every hint."""
    for name, predicate in parsed.items():
        actual = disk.get(name)
        if actual is None or actual == "":
            return False  # a hint on a value the disk does not report never matches
        if name == "by_path":
            if not any(predicate(path) for path in actual):
                return False
        elif not predicate(actual):
            return False
    return True


def _describe(disk):
    return "%s (serial %s, model %s, %d GiB)" % (
        disk.get("name"), disk.get("serial") or "-", disk.get("model") or "-",
        (disk.get("size") or 0) // GIB)


def pick_disk(disks, hints):
    """The one disk matching ``hints``; DeployError when none or several match."""
    parsed = parse_hints(hints)
    found = [disk for disk in disks if matches(disk, parsed)]
    if not found:
        seen = "; ".join(_describe(d) for d in disks) or "no disks at all"
        _fail("no disk matches %s (this machine has: %s); fix: correct root_device in the "
              "node's description" % (hints, seen))
    if len(found) > 1:
        _fail("%d disks match %s: %s; refusing to guess; fix: add a serial, wwn or by_path hint"
              % (len(found), hints, "; ".join(_describe(d) for d in found)))
    return found[0]
