"""The controller's config file (default /etc/gpufleet/controller.yml) and how it meets the flags.

Read with the project's strict YAML reader (duplicate keys refused) and validated like the
capacity policy: a misspelt or mistyped key is refused whole, each problem naming its key
path and the fix, and nothing runs. docs/service.md lists every key.

Precedence for each setting: a command-line flag, then (``spool`` only) the environment
variable ``$GPUFLEET_CONTROLLER_SPOOL``, then the file, then the built-in default. A flag that
differs from the file's value is said once at start, never silently replaced by it.
"""
import os
from typing import Literal, Optional, Tuple

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, model_validator
from typing_extensions import Annotated

from ansible_collections.gpufleet.baremetal.plugins.module_utils import strict_yaml
from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.strict_yaml import StrictYamlError
from gpufleet.capacity.policy import Duration
from gpufleet.capacity.policy_errors import explain

__all__ = ["DEFAULT_PATH", "DEFAULTS", "ConfigError", "ControllerConfig", "parse_config", "load_config",
           "read_for", "merge", "SETTINGS"]

DEFAULT_PATH = "/etc/gpufleet/controller.yml"
Path = Annotated[str, Field(min_length=1, strict=True)]
Port = Annotated[int, Field(ge=0, le=65535, strict=True)]


class ConfigError(GpufleetError, ValueError):
    """The controller's config file (or a setting) was refused; nothing ran."""

    def __init__(self, source, problems):
        self.source, self.problems = source, list(problems)
        head = "controller config %s refused (%d problem(s)); nothing ran:" % (source, len(self.problems))
        super().__init__("\n  ".join([head] + self.problems), source=source, problems=self.problems)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MetricsConfig(_Strict):
    address: Path = "127.0.0.1"
    port: Optional[Port] = None


class RetentionConfig(_Strict):
    keep_runs: Optional[Annotated[int, Field(ge=0, strict=True)]] = None
    keep_for: Optional[Duration] = None


class ControllerConfig(_Strict):
    policy: Optional[Path] = None
    inventory: Optional[Path] = None
    vars: Tuple[Path, ...] = ()
    ledger: Optional[Path] = None
    slurm_prefix: Optional[str] = None
    spool: Optional[Path] = None
    state_dir: Optional[Path] = None
    id: Optional[Path] = None
    concurrency: Optional[Annotated[int, Field(ge=1, strict=True)]] = None
    interval: Optional[Duration] = None
    lease_ttl: Optional[Duration] = None
    wait: Optional[StrictBool] = None
    log_format: Optional[Literal["text", "json"]] = None
    metrics: MetricsConfig = MetricsConfig()
    retention: RetentionConfig = RetentionConfig()

    @model_validator(mode="after")
    def _positive(self):
        for key in ("interval", "lease_ttl"):
            if getattr(self, key) is not None and getattr(self, key) <= 0:
                raise ValueError("%s must be above 0s; fix: write a duration like 10s" % key)
        return self


# setting (the argparse dest) -> (the file's key path, the flag, the built-in default)
SETTINGS = {
    "policy": (("policy",), "--policy", None),
    "inventory": (("inventory",), "-i/--inventory", None),
    "vars": (("vars",), "-e/--vars", None),
    "ledger": (("ledger",), "--ledger", None),
    "slurm_prefix": (("slurm_prefix",), "--slurm-prefix", None),
    "spool": (("spool",), "--spool", None),
    "state_dir": (("state_dir",), "--state-dir", None),
    "id": (("id",), "--id", None),
    "concurrency": (("concurrency",), "--concurrency", None),
    "interval": (("interval",), "--interval", 10.0),
    "lease_ttl": (("lease_ttl",), "--lease-ttl", 60.0),
    "wait": (("wait",), "--wait", False),
    "log_format": (("log_format",), "--log-format", "text"),
    "metrics_addr": (("metrics", "address"), "--metrics-addr", "127.0.0.1"),
    "metrics_port": (("metrics", "port"), "--metrics-port", None),
    "keep_runs": (("retention", "keep_runs"), "--keep-runs", 500),
    "keep_for": (("retention", "keep_for"), "--keep-for", 7 * 86400.0),
}
DEFAULTS = {name: default for name, (_key, _flag, default) in SETTINGS.items()}
# Paths in the file are taken relative to the file's folder (as a unit's WorkingDirectory= may differ).
_PATHS = ("policy", "inventory", "ledger", "spool", "state_dir")


def _explain(exc):
    return [line.replace("see docs/capacity.md, Policy", "see docs/service.md")
            .replace("docs/capacity.md", "docs/service.md") for line in explain(exc, ControllerConfig)]


def _validate(data, source):
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(source, ["(top level): expected a mapping of settings, got %s; fix: write key: value "
                                   "lines such as 'policy: /etc/gpufleet/capacity.yml'" % type(data).__name__])
    try:
        return ControllerConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(source, _explain(exc)) from None


def parse_config(text, source="<config>"):
    """YAML text -> ControllerConfig, or ConfigError listing every problem."""
    return _read(lambda: strict_yaml.loads(text, source), source)


def load_config(path):
    """Read and validate ``path``; a missing or unreadable file is a ConfigError."""
    return _read(lambda: strict_yaml.load_file(str(path)), str(path))


def _read(load, source):
    """``load()``'s YAML validated; a YAML that cannot be read is a ConfigError naming its line."""
    try:
        data = load()
    except StrictYamlError as exc:
        where = "(file) line %d" % exc.line if exc.line else "(file)"
        raise ConfigError(source, ["%s: %s; fix: %s" % (where, exc.problem, exc.fix)]) from None
    return _validate(data, source)


def read_for(explicit, lab=False, default=None):
    """(ControllerConfig or None, source): a named file must exist; the default file is read when
    it exists, and never with --lab (the lab's paths must not meet a host's production config)."""
    default = DEFAULT_PATH if default is None else default
    if explicit:
        return load_config(explicit), explicit
    if lab or not os.path.exists(default):
        return None, None
    return load_config(default), default


def _file_value(config, key):
    """(present, value) of a key path in the file; present only when the file wrote it."""
    node = config
    for part in key:
        if node is None or part not in node.model_fields_set:
            return False, None
        node = getattr(node, part)
    return True, node


def _shown(name, value):
    if name == "ledger" and value and "://" in str(value):
        return "(a URL)"    # may carry a password: never printed
    return repr(list(value) if isinstance(value, tuple) else value)


def merge(flags, config, source, environ=None):
    """{setting: value}, {setting: origin} and notes (one line per flag that overrides the file).

    ``flags``: {setting: value or None when the flag was not given}."""
    environ = os.environ if environ is None else environ
    values, origins, notes = {}, {}, []
    base = os.path.dirname(os.path.abspath(source)) if source else None
    for name, (key, flag, default) in SETTINGS.items():
        present, from_file = _file_value(config, key) if config is not None else (False, None)
        if present and name in _PATHS and from_file is not None and not (name == "ledger" and "://" in from_file):
            from_file = os.path.join(base, from_file)
        if present and name == "vars":
            from_file = [os.path.join(base, v) for v in from_file]
        given = flags.get(name)
        if name == "vars" and given == []:
            given = None
        if given is not None:
            values[name], origins[name] = given, flag
            if present and _norm(name, given) != _norm(name, from_file):
                notes.append("%s %s overrides %s: %s of %s" % (flag, _shown(name, given), ".".join(key),
                                                               _shown(name, from_file), source))
        elif name == "spool" and environ.get("GPUFLEET_CONTROLLER_SPOOL"):
            values[name], origins[name] = environ["GPUFLEET_CONTROLLER_SPOOL"], "$GPUFLEET_CONTROLLER_SPOOL"
            if present and from_file != values[name]:
                notes.append("$GPUFLEET_CONTROLLER_SPOOL %r overrides spool: %r of %s" % (values[name], from_file,
                                                                                       source))
        elif present:
            values[name], origins[name] = from_file, "%s (%s)" % (source, ".".join(key))
        else:
            values[name], origins[name] = default, "default"
    return values, origins, notes


def _norm(name, value):
    if name == "vars":
        return [os.path.abspath(v) for v in value or ()]
    if name in _PATHS and value is not None and not (name == "ledger" and "://" in str(value)):
        return os.path.abspath(value)
    return value

