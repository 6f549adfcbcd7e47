"""The lab config's shape: every key, its type and its range, checked before use.

``validate(raw, source)`` raises LabError naming the config file and the key (``bmc.port``)
with what was found and what is expected, so a bad config never reaches the lab as a
traceback. Unknown keys are refused too: a misspelt key would otherwise be ignored.
"""
import string

from lab.twin.errors import LabError

__all__ = ["validate", "SCHEMA"]

_STR, _INT, _NUM, _PORT, _MAP, _RANGE = "text", "integer", "number", "port", "mapping", "range"
# key -> (kind, required); sections are mappings of the same form.
SCHEMA = {
    "state_dir": (_STR, True), "racks": (_INT, True), "nodes_per_rack": (_INT, True), "sku": (_STR, False),
    "hostname_pattern": (_STR, True),
    "bmc": ({"address_pattern": (_STR, True), "port": (_PORT, True), "username": (_STR, True),
             "password": (_STR, False), "firmware": (_MAP, False), "power_delay": (_RANGE, False)}, True),
    "manager": ({"address": (_STR, True), "hook_port": (_PORT, True), "artifact_port": (_PORT, True),
                 "images_root": (_STR, True), "image_public_key": (_STR, True), "poll_interval": (_NUM, False)}, True),
    "docker": ({"network": (_STR, True), "container_prefix": (_STR, True), "disk_repository": (_STR, True)}, True),
    "slurm": ({"container": (_STR, True), "hostname": (_STR, True), "cluster": (_STR, True),
               "partition": (_STR, True)}, True),
    "hwsim": ({"model": (_STR, False)}, False),
}


def _fail(source, key, problem, fix):
    raise LabError("Lab config %s: %s %s. %s" % (source, key, problem, fix), config=source, key=key)


def _check_value(source, key, kind, value):
    if kind == _STR and not (isinstance(value, str) and value.strip()):
        _fail(source, key, "is %r, not a non-empty text" % (value,), "Quote a text value.")
    if kind in (_INT, _PORT) and (isinstance(value, bool) or not isinstance(value, int)):
        _fail(source, key, "is %r, not an integer" % (value,), "Write a whole number.")
    if kind == _PORT and not 1 <= value <= 65535:
        _fail(source, key, "is %d, outside 1-65535" % value, "Pick a free TCP port.")
    if kind == _NUM and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0):
        _fail(source, key, "is %r, not a positive number" % (value,), "Write e.g. 1.0.")
    if kind == _RANGE and not (isinstance(value, list) and len(value) == 2
                               and all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
                                       for v in value) and value[0] <= value[1]):
        _fail(source, key, "is %r, not a range [low, high] of seconds" % (value,), "Write e.g. [1, 4].")
    if kind == _MAP and not isinstance(value, dict):
        _fail(source, key, "is %r, not a mapping" % (value,), "Write key: value pairs.")


def _check_section(source, prefix, schema, raw):
    if not isinstance(raw, dict):
        _fail(source, prefix or "the top level", "is %r, not a mapping" % (raw,),
              "Copy lab/config/default.yml and edit it.")
    for key in raw:
        if key not in schema:
            _fail(source, prefix + str(key), "is not a lab config key", "Known keys here: %s."
                  % ", ".join(sorted(schema)))
    for key, (kind, required) in sorted(schema.items()):
        if key not in raw or raw[key] is None:
            if required:
                _fail(source, prefix + key, "is missing", "Copy it from lab/config/default.yml.")
            continue
        if isinstance(kind, dict):
            _check_section(source, prefix + key + ".", kind, raw[key])
        else:
            _check_value(source, prefix + key, kind, raw[key])


def _check_pattern(source, key, pattern, fields):
    """A str.format pattern that uses exactly the named fields."""
    try:
        used = set(name for _t, name, _s, _c in string.Formatter().parse(pattern) if name is not None)
        sample = pattern.format(**dict((f, 1) for f in fields))
    except (ValueError, KeyError, IndexError, AttributeError) as exc:
        _fail(source, key, "%r is not a usable pattern (%s)" % (pattern, exc),
              "Use only the fields %s, e.g. {rack}." % ", ".join("{%s}" % f for f in fields))
    if used - set(fields) or not sample.strip():
        _fail(source, key, "%r uses %s" % (pattern, ", ".join(sorted(used)) or "no field"),
              "Use only the fields %s." % ", ".join("{%s}" % f for f in fields))
    return used


def validate(raw, source):
    """Check ``raw`` (the parsed YAML plus overrides); raise LabError naming the key."""
    _check_section(source, "", SCHEMA, raw)
    _check_pattern(source, "bmc.address_pattern", raw["bmc"]["address_pattern"], ("rack",))
    if _check_pattern(source, "hostname_pattern", raw["hostname_pattern"], ("rack", "slot")) != {"rack", "slot"}:
        _fail(source, "hostname_pattern", "%r does not use both {rack} and {slot}" % raw["hostname_pattern"],
              "Node names must be unique: use both, e.g. lab-r{rack}n{slot}.")
