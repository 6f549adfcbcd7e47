"""Policies for a run: the planner's own loader, plus field overrides for comparisons and sweeps.

An override is ``dotted.path=value`` on the policy file's YAML (``pools.gpu.floors.warm=8``);
the changed document goes through ``gpufleet.capacity.policy.parse_policy`` like any file, so
a sweep can only produce policies the controller would accept. The simulator reads one pool.
"""
import copy
import os
import stat

import yaml

from ansible_collections.gpufleet.baremetal.plugins.module_utils import strict_yaml
from ansible_collections.gpufleet.baremetal.plugins.module_utils.strict_yaml import StrictYamlError
from gpufleet.simulate.errors import SimulateError

__all__ = ["PolicyRun", "load", "parse_override", "pool_of"]


class PolicyRun:
    """One policy to simulate: its name, source, overrides and the validated Policy."""

    def __init__(self, name, source, overrides, policy):
        self.name, self.source, self.overrides, self.policy = name, source, overrides, policy


def parse_override(text):
    """'a.b.c=value' -> (['a', 'b', 'c'], value parsed as YAML)."""
    path, sep, value = text.partition("=")
    if not sep or not path.strip():
        raise SimulateError("Override %r is not FIELD=VALUE (e.g. pools.gpu.floors.warm=8)." % text)
    try:
        parsed = strict_yaml.loads(value, "--set %s" % text)
    except StrictYamlError as exc:
        raise SimulateError("%s. Quote the value if it is text." % exc.msg) from None
    return [part for part in path.strip().split(".")], parsed


def _set(document, path, value, source):
    node = document
    for depth, key in enumerate(path[:-1]):
        child = node.get(key) if isinstance(node, dict) else None
        if child is None and isinstance(node, dict):
            child = node[key] = {}
        if not isinstance(child, dict):
            raise SimulateError("%s: cannot set %s: %s is not a mapping." % (source, ".".join(path), ".".join(path[:depth + 1])))
        node = child
    node[path[-1]] = value


def _read(path):
    """The policy file's bytes; the strict YAML reader decodes them (non-UTF-8 is a PolicyError)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise SimulateError("Cannot read policy %s: not a regular file. Give a policy YAML file." % path)
        with open(path, "rb") as handle:
            data = handle.read(strict_yaml.MAX_BYTES + 1)
    except OSError as exc:
        raise SimulateError("Cannot read policy %s: %s. Check the path." % (path, exc.strerror)) from None
    if len(data) > strict_yaml.MAX_BYTES:
        raise SimulateError("Cannot read policy %s: larger than %d MiB. Give a policy YAML file."
                            % (path, strict_yaml.MAX_BYTES >> 20))
    return data


def load(path, overrides=(), name=None):
    """A PolicyRun from ``path`` with ``overrides`` ([(path_list, value)]) applied.

    The planner's PolicyError (a ValueError, every bad field on its own line) becomes a
    SimulateError with the same text, so the command line prints it and exits 1."""
    from gpufleet.capacity.policy import PolicyError

    try:
        return _load(path, overrides, name)
    except PolicyError as exc:
        raise SimulateError(str(exc)) from None


def _load(path, overrides, name):
    from gpufleet.capacity.policy import parse_policy

    text = _read(path)
    if overrides:
        try:
            document = copy.deepcopy(strict_yaml.loads(text, path))
        except StrictYamlError:
            document = None                     # parse_policy below names the problem
        if not isinstance(document, dict):
            parse_policy(text, source=path)        # raises the loader's own error naming the problem
            raise SimulateError("%s: the policy is not a YAML mapping; overrides need one." % path)
        for keys, value in overrides:
            _set(document, keys, value, path)
        label = ", ".join("%s=%s" % (".".join(k), v) for k, v in overrides)
        text, path_label = yaml.safe_dump(document, sort_keys=False), "%s (%s)" % (path, label)
    else:
        label, path_label = "", path
    policy = parse_policy(text, source=path_label)
    default = path.rsplit("/", 1)[-1].rsplit(".", 1)[0] + (" " + label if label else "")
    return PolicyRun(name or default, path, [(".".join(k), v) for k, v in overrides], policy)


def pool_of(policy, wanted=None):
    """(name, Pool) the simulator replays the trace into: ``wanted`` or the only pool."""
    pools = policy.pools
    if wanted is not None:
        if wanted not in pools:
            raise SimulateError("Pool %r is not in the policy (pools: %s). Fix --pool." % (wanted, ", ".join(pools)))
        return wanted, pools[wanted]
    if len(pools) != 1:
        raise SimulateError("The policy has pools %s; name the one to simulate with --pool." % ", ".join(pools))
    name = next(iter(pools))
    return name, pools[name]
