"""The controller's log lines: the human text, or one JSON object a line (``log_format: json``).

A line is said once, with its message and, where it is about one action, its fields (the
decision id, the action kind, pool, nodes and outcome); the text form writes the message, the
JSON form writes ``{"ts", "level", "message", ...fields}``. Both forms pass through one mask:
the values of secret-named variables (``*PASSWORD*``, ``*TOKEN*``, ``*SECRET*``, ...: the names
gpufleet.runner_artifacts masks) from the variable files and the environment, and the password
inside any URL, never reach a line. docs/controller.md, "Logs", shows how to read them.
"""
import datetime
import json
import sys
import threading
import time

from gpufleet.runner_artifacts import MASK, SECRET_NAME, URL_PASSWORD

__all__ = ["FORMATS", "LEVELS", "Log", "secrets_of", "mask", "action_fields"]

FORMATS = ("text", "json")
LEVELS = ("info", "warning", "error")


def secrets_of(variables=None, environ=None):
    """The set of secret values: every value under a secret-looking name, at any depth of
    ``variables`` (the merged variable files), and of ``environ``."""
    found = set()

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if SECRET_NAME.search(str(key)) and isinstance(value, (str, int, float)) \
                        and not isinstance(value, bool) and str(value):
                    found.add(str(value))
                else:
                    walk(value)
        elif isinstance(node, (list, tuple)):
            for item in node:
                walk(item)
    walk(variables or {})
    walk(dict(environ or {}))
    return found


def mask(text, secrets=()):
    """``text`` with URL passwords and every value of ``secrets`` replaced by the mask."""
    text = URL_PASSWORD.sub(lambda m: m.group("head") + MASK, str(text))
    for secret in sorted(secrets, key=len, reverse=True):    # a longer secret before its prefix
        text = text.replace(secret, MASK)
    return text


def _masked(value, secrets):
    if isinstance(value, str):
        return mask(value, secrets)
    if isinstance(value, (list, tuple)):
        return [_masked(v, secrets) for v in value]
    if isinstance(value, dict):
        return {str(k): _masked(v, secrets) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return mask(str(value), secrets)


def _iso(at):
    moment = datetime.datetime.fromtimestamp(at, tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (moment.microsecond // 1000)


def action_fields(action, decision=None, outcome=None, event=None, nodes=None):
    """The fields of a line about one action (``decision``: an id, or a list for a batch;
    ``nodes``: the batch's nodes when not the action's own)."""
    nodes = list(nodes if nodes is not None else getattr(action, "nodes", ()) or ())
    fields = {"event": event, "kind": getattr(action, "kind", None), "pool": getattr(action, "pool", None),
              "nodes": nodes, "outcome": outcome}
    if isinstance(decision, (list, tuple)):
        fields["decisions"] = list(decision)
    else:
        fields["decision"] = decision
    if len(nodes) == 1:
        fields["node"] = nodes[0]
    return fields


class Log:
    """``log(message, level="info", **fields)`` writes one line to ``stream`` (read when
    written, default sys.stdout); lines from the actuator's threads never interleave."""

    def __init__(self, stream=None, fmt="text", secrets=(), clock=time.time):
        if fmt not in FORMATS:
            raise ValueError("log format %r: expected one of %s" % (fmt, ", ".join(FORMATS)))
        self.stream, self.fmt, self.clock = stream, fmt, clock
        self.secrets = set(secrets)
        self._lock = threading.Lock()

    def to(self, stream):
        """The same log (format, secrets) writing to another stream, e.g. stderr."""
        other = Log(stream, self.fmt, clock=self.clock)
        other.secrets = self.secrets       # shared: a secret learnt later is masked in both
        return other

    def line(self, message, level="info", **fields):
        """The line as written (without its newline)."""
        if level not in LEVELS:
            raise ValueError("log level %r: expected one of %s" % (level, ", ".join(LEVELS)))
        text = mask(message, self.secrets)
        if self.fmt == "text":
            return text
        record = {"ts": _iso(self.clock()), "level": level, "message": text}
        for key, value in fields.items():
            if value is not None and value != [] and value != () and key not in record:
                record[key] = _masked(value, self.secrets)
        return json.dumps(record, ensure_ascii=False, default=str)

    def __call__(self, message, level="info", **fields):
        line = self.line(message, level, **fields)
        stream = self.stream if self.stream is not None else sys.stdout
        with self._lock:
            stream.write(line + "\n")
            stream.flush()
