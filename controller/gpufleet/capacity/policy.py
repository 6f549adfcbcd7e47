"""The capacity policy: a YAML file validated into frozen objects, or refused whole.

Why pydantic (v2): typed, nested, immutable models with one error per bad field and its path
(``pools.a100.floors.hot``); we only add the wording (what is wrong, the fix). A policy with any
error is refused whole, so nothing of a bad file is ever applied. docs/capacity.md lists every
knob. The only I/O in the capacity package is ``load_policy`` reading the file, through the
project's one strict YAML reader (plugins/module_utils/strict_yaml.py).
"""
import math
import re
from typing import Dict, Literal, Optional, Tuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (BaseModel, ConfigDict, Field, ValidationError, field_validator,
                      model_validator)
from pydantic.functional_validators import BeforeValidator
from typing_extensions import Annotated

from ansible_collections.gpufleet.baremetal.plugins.module_utils import strict_yaml
from ansible_collections.gpufleet.baremetal.plugins.module_utils.strict_yaml import StrictYamlError
from gpufleet.capacity.duration import parse_duration
from gpufleet.capacity.policy_errors import PolicyError, explain

__all__ = ["nodes_of", "Policy", "Pool", "Fleet", "TierCounts", "TierCeilings", "Members", "Match",
           "Schedule", "Forecast", "Steady", "Estimates", "Day2", "Persistence", "Refresh",
           "PolicyError", "parse_duration", "parse_budget",
           "parse_policy", "load_policy", "size_warnings", "DAYS"]

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,62}$")
_HHMM = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


Duration = Annotated[float, BeforeValidator(parse_duration)]
Count = Annotated[int, Field(ge=0, strict=True)]


class _Strict(BaseModel):
    # extra=forbid: a misspelt knob (flor:) is an error, never silently ignored.
    model_config = ConfigDict(extra="forbid", frozen=True)


class TierCounts(_Strict):
    """Nodes per warmth tier: floors (kept ready at least)."""
    hot: Count = 0
    warm: Count = 0


class TierCeilings(_Strict):
    """Most nodes kept per warmth tier; null: no ceiling."""
    hot: Optional[Count] = None
    warm: Optional[Count] = None


class Members(_Strict):
    """Which nodes belong to the pool: any inventory group, name pattern (fnmatch) or label."""
    groups: Tuple[str, ...] = ()
    patterns: Tuple[str, ...] = ()
    labels: Dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _some_rule(self):
        if not (self.groups or self.patterns or self.labels):
            raise ValueError("no member rule; fix: give at least one of groups, patterns "
                             "or labels")
        return self


class Match(_Strict):
    """Which jobs the pool serves: partition (empty: any) and the features/GRES it provides.

    A job matches when its partition is listed (or the list is empty) and every feature or
    GRES name it asks for is in ``features`` + ``gres``.
    """
    partitions: Tuple[str, ...] = ()
    features: Tuple[str, ...] = ()
    gres: Tuple[str, ...] = ()


class Schedule(_Strict):
    """A time window (local time in ``timezone``) with its own floors, e.g. a workday buffer.

    ``end`` before ``start`` crosses midnight: the window belongs to the day it starts.
    """
    name: str
    days: Tuple[Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"], ...] = DAYS
    start: str
    end: str
    timezone: str = "UTC"
    floors: TierCounts

    @field_validator("days")
    @classmethod
    def _some_day(cls, value):
        if not value:
            raise ValueError("no days, the window never opens; fix: list at least one day "
                             "(mon ... sun) or leave days out for every day")
        return value

    @field_validator("start", "end")
    @classmethod
    def _clock(cls, value):
        if not _HHMM.match(value):
            raise ValueError(f"{value!r} is not a time of day; fix: write HH:MM, 24-hour, "
                             "like 08:00 or 20:30")
        return value

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value):
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown timezone {value!r}; fix: use an IANA name like "
                             "Europe/Berlin, America/New_York or UTC") from None
        return value

    @model_validator(mode="after")
    def _not_empty(self):
        if self.start == self.end:
            raise ValueError("start equals end, the window is empty; fix: set end to a "
                             "different time (end before start crosses midnight)")
        return self


def _within(field, value, low, high, span, example):
    """A bounded duration: the value, or one error naming the field, its span and the fix."""
    if not low <= value <= high:
        raise ValueError(f"{field} {value:g}s is outside {span}; fix: write a duration like {example}")
    return value


class Forecast(_Strict):
    """Raise a floor from recorded demand at the same time of week over past weeks."""
    enabled: bool = Field(default=False, strict=True)
    # seasonal: the weekly-peak quantile below; learned: gradient-boosted trees fitted outside
    # the pass on history before the replay (gpufleet.capacity.learned)
    method: Literal["seasonal", "learned"] = "seasonal"
    quantile: float = Field(default=0.9, strict=True, gt=0, le=1)
    lookback_weeks: int = Field(default=4, strict=True, ge=1, le=52)
    bucket_minutes: int = Field(default=15, strict=True, ge=1, le=1440)
    trend_weight: float = Field(default=0.5, strict=True, ge=0, le=4)
    lead_time: Duration = 1800.0
    tier: Literal["hot", "warm"] = "hot"
    # a floor the forecast raised stays up this long (the planner holds the highest forecast of
    # the last min_on_time): a node woken for it is not parked again within minutes
    min_on_time: Duration = 1800.0
    # learned: the controller refits the model from the ledger's demand history this often,
    # outside the pass; until a pool has a model (fitting, too little history, no scikit-learn)
    # it forecasts as ``fallback`` says: seasonal, or none (no forecast floor)
    refit_interval: Duration = 86400.0
    fallback: Literal["seasonal", "none"] = "seasonal"

    @field_validator("refit_interval")
    @classmethod
    def _refit(cls, value):
        return _within("refit_interval", value, 600, 30 * 86400, "10m to 30d",
                       "24h (how often the controller refits the learned model)")

    @field_validator("min_on_time")
    @classmethod
    def _on_time(cls, value):
        return _within("min_on_time", value, 0, 86400, "0s to 1d",
                       "30m (0s: a raised floor falls as soon as the forecast does)")


def nodes_of(value, pool_nodes):
    """A setting kept as a node count (3) or a percent of the pool ('10%', as the parsers below
    keep it) in nodes of a pool of ``pool_nodes``: a percent is rounded up, as Karpenter rounds
    its disruption budgets. The disruption budget and the steady level both resolve here."""
    if isinstance(value, int):
        return value
    return math.ceil(pool_nodes * float(value.strip().rstrip("%")) / 100.0 - 1e-9)


def _pool_share(field, least, count, percent):
    """A parser for a node count (``least`` to 100000) or a percent of the pool's nodes
    ('10%'), kept as given: gpufleet.capacity.steady resolves a percent against the pool."""
    span = "above 0 and at most 100" if least else "from 0 to 100"
    fix = f"write a node count like {count} or a percent of the pool like '{percent}'"

    def parse(value):
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ValueError(f"{value!r:.60} is not a {field}; fix: {fix}")
        if isinstance(value, int):
            if not least <= value <= 100000:
                raise ValueError(f"a {field} of {value} nodes is outside {least} to 100000; fix: {fix}")
            return value
        found = _PERCENT.match(value)
        if not found:
            raise ValueError(f"{value!r:.60} is not a {field}; fix: {fix} (a count without quotes, "
                             "a percent with %)")
        share = float(found.group(1))
        if not (0 < share if least else 0 <= share) or share > 100:
            raise ValueError(f"a {field} of {value.strip()} of the pool is not {span} percent; fix: {fix}")
        return f"{found.group(1)}%"
    return parse


class Steady(_Strict):
    """Hold the powered node count still (gpufleet.capacity.steady): a level in whole steps
    above the peak demand of the last ``hold``, woken in one batch, parked only when the peak of
    the whole ``hold`` fits a lower step. ``headroom`` and ``step``: a node count, or a percent
    of the pool's nodes ('10%', rounded up; a step is at least 1 node)."""
    enabled: bool = Field(default=False, strict=True)
    headroom: Annotated[object, BeforeValidator(_pool_share("headroom", 0, 6, "10%"))] = 4
    step: Annotated[object, BeforeValidator(_pool_share("step", 1, 8, "12.5%"))] = 4
    hold: Duration = 21600.0

    @field_validator("hold")
    @classmethod
    def _hold(cls, value):
        return _within("hold", value, 60, 7 * 86400, "1m to 7d",
                       "6h (how long the demand must stay low before the powered level falls)")


class Estimates(_Strict):
    """Expected time from each tier to hot: a gang member's own deadline, and whether a
    spare can still make the gang deadline."""
    warm: Duration = 600.0
    cold: Duration = 2700.0


def parse_budget(value):
    """A disruption budget: a node count (3) or a share of the pool ('10%'), kept as given.

    Karpenter's default is 10%; a percent is rounded up as Karpenter does (gpufleet.day2.budget),
    0 freezes day-2 work for the pool."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a budget; fix: write a node count like 2 or a "
                         "percent like '10%'")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"a budget of {value} nodes is below 0; fix: write 0 or more")
        return value
    found = _PERCENT.match(value) if isinstance(value, str) else None
    if not found or not 0 < float(found.group(1)) <= 100:
        raise ValueError(f"{value!r} is not a budget; fix: write a node count like 2 or a "
                         "percent above 0 and at most 100 like '10%'")
    return value.strip()


class Persistence(_Strict):
    """A health signal acts only when it repeats ``count`` times within ``window``, or lasts
    ``duration`` (when set) - a flapping node is not cycled."""
    count: int = Field(default=3, strict=True, ge=1, le=100)
    window: Duration = 600.0
    duration: Optional[Duration] = None

    @model_validator(mode="after")
    def _window_positive(self):
        if self.window <= 0:
            raise ValueError("window must be above 0s; fix: write a duration like 10m")
        return self


class Refresh(_Strict):
    """Image or gate-profile rollouts: canaries first, halted by their gate failures."""
    canaries: int = Field(default=1, strict=True, ge=1, le=100)
    max_canary_failures: int = Field(default=0, strict=True, ge=0, le=100)


class Day2(_Strict):
    """Automatic day-2 work for a pool (docs/day2.md): detect, drain, recycle, renew, refresh."""
    budget: Annotated[object, BeforeValidator(parse_budget)] = "10%"
    persistence: Persistence = Persistence()
    drain_timeout: Duration = 7200.0
    on_drain_timeout: Literal["requeue", "wait"] = "requeue"
    max_recycles: int = Field(default=2, strict=True, ge=1, le=20)
    recycle_window: Duration = 86400.0
    renewal_max_age: Optional[Duration] = None
    renewal_reimage: bool = Field(default=False, strict=True)
    refresh: Refresh = Refresh()
    # How often the controller reads every BMC's health and power (one fleet read; the
    # shortest of the pools' values is used); none: no Redfish detection.
    redfish_interval: Optional[Duration] = 60.0
    # How often the controller runs the gate's short health phase (XID, ECC, row remapping,
    # DCGM level 1) on the idle nodes in service (the shortest of the pools' values); none: never.
    health_interval: Optional[Duration] = 1800.0

    @model_validator(mode="after")
    def _interval_positive(self):
        if self.redfish_interval is not None and self.redfish_interval <= 0:
            raise ValueError("redfish_interval must be above 0s; fix: write a duration like 1m, "
                             "or null for no Redfish detection")
        if self.health_interval is not None and self.health_interval < 60:
            raise ValueError("health_interval must be 1m or more (DCGM level 1 alone takes up to a "
                             "minute); fix: write a duration like 30m, or null for no idle health check")
        return self


class Pool(_Strict):
    """One pool: nodes of one SKU and tier label, the jobs they serve and how warm to keep them."""
    sku: str
    tier: str = "standard"
    gpus_per_node: int = Field(default=8, strict=True, ge=1, le=64)
    members: Members
    match: Match = Match()
    floors: TierCounts = TierCounts()
    ceilings: TierCeilings = TierCeilings()
    max_concurrent_bringups: int = Field(default=4, strict=True, ge=1)
    gang_deadline: Duration = 3600.0
    # false: a member in trouble rolls the whole gang back at once (what Slurm's power saving
    # and Cluster Autoscaler do); kept to compare against substitution in the lab and simulator
    gang_substitution: bool = Field(default=True, strict=True)
    idle_time: Duration = 900.0
    park_to: Literal["auto", "hot", "warm"] = "auto"
    gate_validity: Duration = 7 * 86400.0
    failures_before_break_fix: int = Field(default=2, strict=True, ge=1, le=10)
    # the acceptance gate's fabric phase measures this many nodes together (the gate
    # profile's checks.nccl_multi_node.nodes, default 2): bring-ups short of a known-good
    # peer get companions from cold (planner.py)
    fabric_test_nodes: int = Field(default=2, strict=True, ge=1, le=64)
    estimates: Estimates = Estimates()
    schedules: Tuple[Schedule, ...] = ()
    forecast: Forecast = Forecast()
    steady: Steady = Steady()
    day2: Day2 = Day2()

    @model_validator(mode="after")
    def _floors_under_ceilings(self):
        for tier in ("hot", "warm"):
            ceiling = getattr(self.ceilings, tier)
            if ceiling is None:
                continue
            if getattr(self.floors, tier) > ceiling:
                raise ValueError(f"floors.{tier} ({getattr(self.floors, tier)}) is above "
                                 f"ceilings.{tier} ({ceiling}); fix: lower the floor or raise "
                                 "the ceiling")
            for sched in self.schedules:
                if getattr(sched.floors, tier) > ceiling:
                    raise ValueError(f"schedule {sched.name!r} floors.{tier} "
                                     f"({getattr(sched.floors, tier)}) is above ceilings.{tier} "
                                     f"({ceiling}); fix: lower it or raise the ceiling")
        names = [s.name for s in self.schedules]
        if len(set(names)) != len(names):
            raise ValueError(f"schedule names repeat ({', '.join(sorted(names))}); fix: give "
                             "each schedule its own name")
        return self


class Fleet(_Strict):
    """Fleet-wide settings."""
    concurrency_limit: int = Field(default=10, strict=True, ge=1)
    interval: Duration = 10.0


class Policy(_Strict):
    """The whole policy file: ``version: 1``, ``fleet`` and ``pools`` (ordered: the first pool
    whose match rules fit a job serves it)."""
    version: Literal[1] = 1
    fleet: Fleet = Fleet()
    pools: Dict[str, Pool]

    @field_validator("pools")
    @classmethod
    def _pool_names(cls, pools):
        if not pools:
            raise ValueError("no pools; fix: define at least one pool under pools:")
        for name in pools:
            if not _NAME.match(name):
                raise ValueError(f"pool name {name!r} is not allowed; fix: use lower-case "
                                 "letters, digits, '.', '_' or '-', starting with a letter "
                                 "or digit (at most 63)")
        return pools


def _file_problem(exc):
    """A StrictYamlError as one policy problem line: ``(file) line N: problem; fix: ...``."""
    where = "(file) line %d" % exc.line if exc.line else "(file)"
    return f"{where}: {exc.problem}; fix: {exc.fix}"


def _document(read, source):
    """The YAML document ``read()`` returns (the shared strict reader: duplicate keys, deep
    nesting, alias bombs and non-UTF-8 text are refused), or a PolicyError naming the problem."""
    try:
        return read()
    except StrictYamlError as exc:
        raise PolicyError(source, [_file_problem(exc)]) from None


def parse_policy(text, source="<policy>"):
    """YAML text (str or UTF-8 bytes) -> Policy, or PolicyError listing every problem (nothing is applied)."""
    return _validate(_document(lambda: strict_yaml.loads(text, source), source), source)


def _validate(data, source):
    if not isinstance(data, dict):
        raise PolicyError(source, ["(top level): expected a mapping with version, fleet and "
                                   f"pools, got {type(data).__name__}; fix: start the file "
                                   "with 'pools:'"])
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        raise PolicyError(source, explain(exc, Policy)) from None


def load_policy(path):
    """Read and validate a policy file. Unreadable files (missing, not a regular file, over
    16 MiB) are PolicyErrors too."""
    source = str(path)
    return _validate(_document(lambda: strict_yaml.load_file(source), source), source)


def size_warnings(policy, members):
    """Floors no pool can meet: ``members`` {pool: nodes it has} -> warning lines (the policy
    is still valid; the pool may grow). A floor above the pool's nodes is never met: the planner
    brings up every node and the pool stays short of its floor."""
    lines = []
    for name, pool in policy.pools.items():
        have = members.get(name)
        if have is None:
            continue
        windows = [("floors", pool.floors)] + [(f"schedule {s.name!r} floors", s.floors) for s in pool.schedules]
        for label, floors in windows:
            total = floors.hot + floors.warm
            if total > have:
                lines.append(f"pools.{name} {label} (hot {floors.hot} + warm {floors.warm} = {total}) exceed "
                             f"the pool's {have} node(s): the floor is never met; fix: lower the floor or "
                             "add nodes to the pool")
    return lines
