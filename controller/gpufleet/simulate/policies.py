"""Policies for a run: the planner's own loader, plus field overrides for comparisons and sweeps.

An override is ``dotted.path=value`` on the policy file's YAML (``pools.gpu.floors.warm=8``);
the changed document goes through ``gpufleet.capacity.policy.parse_policy`` like any file, so
a sweep can only produce policies the controller would accept. The simulator reads one pool.
"""
import copy

import yaml

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
    return [part for part in path.strip().split(".")], yaml.safe_load(value)


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
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        raise SimulateError("Cannot read policy %s: %s. Check the path." % (path, exc.strerror)) from None


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
            document = copy.deepcopy(yaml.safe_load(text))
        except yaml.YAMLError:
            document = None
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
