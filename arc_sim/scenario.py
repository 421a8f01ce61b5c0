"""Scenario files: a workload and a timeline replayed against the simulated world.

The format is documented in docs/scenarios.md. Loading is strict: a mistake gets a message that
names the field (`timeline[2].at: ...`), never a traceback.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel

from arc_sim.metacontroller.realism import (
    DEFAULT_CLIENT_BURST,
    DEFAULT_CLIENT_QPS,
    DEFAULT_HOOK_OVERHEAD,
    DEFAULT_INFORMER_LAG,
    DEFAULT_PAYLOAD_SECONDS_PER_MEGABYTE,
    Concurrency,
    Delay,
    Realism,
)

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: object) -> float:
    """`90`, `"90s"`, `"1h30m"`, `"50ms"` -> seconds."""
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or text like 10m, 1h30m, 50ms")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError("a duration cannot be negative")
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text and _DURATION_PART.sub("", text) == "":
            return sum(
                float(number) * _UNIT_SECONDS[unit] for number, unit in _DURATION_PART.findall(text)
            )
    raise ValueError(f"{value!r} is not a duration (use seconds, or text like 10m, 1h30m, 50ms)")


Duration = Annotated[float, BeforeValidator(parse_duration)]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class GitHubKnobs(_Model):
    rate_limit_per_hour: int = Field(default=5000, ge=1)
    error_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    latency: Duration = 0.05
    token_ttl: Duration = 3600.0
    # More personal access tokens GitHub accepts (for githubAPICredentialsFrom Secrets), each
    # with its own budget, reaching the listed organizations only (empty: every account).
    tokens: dict[str, list[str]] = {}


class WebhookKnobs(_Model):
    loss_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    duplicate_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    delay: Duration = 1.0


class DelayKnobs(_Model):
    """A delay distribution: log-normal around `median` with sigma `spread`; with probability
    `tailRate` instead uniform in `tail` (the heavy tail)."""

    median: Duration = 0.0
    spread: float = Field(default=0.0, ge=0.0, le=5.0)
    tail_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    tail: tuple[Duration, Duration] = (0.0, 0.0)
    maximum: Duration | None = Field(default=None, description="no draw is longer")

    @model_validator(mode="after")
    def _ordered_tail(self) -> DelayKnobs:
        if self.tail[0] > self.tail[1]:
            raise ValueError("tail is [shortest, longest]")
        return self

    def delay(self) -> Delay:
        maximum = math.inf if self.maximum is None else self.maximum
        return Delay(self.median, self.spread, self.tail_rate, self.tail, maximum)

    @staticmethod
    def of(delay: Delay) -> DelayKnobs:
        return DelayKnobs(
            median=delay.median,
            spread=delay.spread,
            tail_rate=delay.tail_rate,
            tail=delay.tail,
            maximum=None if math.isinf(delay.maximum) else delay.maximum,
        )


class HookLatencyKnobs(_Model):
    overhead: DelayKnobs = DelayKnobs.of(DEFAULT_HOOK_OVERHEAD)
    per_github_call: Duration | None = Field(
        default=None,
        alias="perGitHubCall",  # as GitHub spells itself; `to_camel` would give perGithubCall
        description="virtual time per GitHub API call; default github.latency",
    )
    per_megabyte: Duration = Field(
        default=DEFAULT_PAYLOAD_SECONDS_PER_MEGABYTE,
        description="virtual time per MB of a call's request and answer together",
    )
    wall_scale: float = Field(default=0.0, ge=0.0)


class MetacontrollerKnobs(_Model):
    """How unfriendly Metacontroller's world is (docs/scenarios.md, "Metacontroller")."""

    profile: Literal["realistic", "friendly"] = "realistic"
    workers: int = Field(default=5, ge=1, le=64)
    concurrency: Concurrency = "interleaved"
    hook_latency: HookLatencyKnobs = HookLatencyKnobs()
    enforce_timeout: bool = True
    informer_lag: DelayKnobs = DelayKnobs.of(DEFAULT_INFORMER_LAG)
    conflict_rate: float = Field(default=0.01, ge=0.0, le=1.0)
    client_qps: float = Field(default=DEFAULT_CLIENT_QPS, ge=0.0)
    client_burst: int = Field(default=DEFAULT_CLIENT_BURST, ge=1)
    replica_restart_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    stress: bool = False

    def realism(self, seed: int, github_latency: float) -> Realism:
        if self.profile == "friendly":
            base = Realism.friendly(workers=self.workers, seed=seed)
            explicit = self.model_fields_set - {"profile", "workers", "stress"}
            base = replace(
                base,
                **{
                    k: v
                    for k, v in self._realism_fields(github_latency).items()
                    if _KNOB_OF.get(k, k) in explicit
                },
            )
        else:
            base = Realism(seed=seed, **self._realism_fields(github_latency))
        return base.stressed() if self.stress else base

    def _realism_fields(self, github_latency: float) -> dict[str, Any]:
        latency = self.hook_latency
        per_call = latency.per_github_call
        return {
            "workers": self.workers,
            "concurrency": self.concurrency,
            "hook_overhead": latency.overhead.delay(),
            "github_call_seconds": github_latency if per_call is None else per_call,
            "payload_seconds_per_megabyte": latency.per_megabyte,
            "wall_scale": latency.wall_scale,
            "enforce_timeout": self.enforce_timeout,
            "informer_lag": self.informer_lag.delay(),
            "conflict_rate": self.conflict_rate,
            "client_qps": self.client_qps,
            "client_burst": self.client_burst,
            "replica_restart_rate": self.replica_restart_rate,
        }


_KNOB_OF = {
    "hook_overhead": "hook_latency",
    "github_call_seconds": "hook_latency",
    "payload_seconds_per_megabyte": "hook_latency",
    "wall_scale": "hook_latency",
}


class ClusterKnobs(_Model):
    nodes: int = Field(default=3, ge=0)
    schedule_delay: Duration = 1.0
    start_delay: Duration = 5.0
    registration_delay: Duration = 3.0


class ObjectRef(_Model):
    kind: str
    namespace: str = "default"
    name: str


class PodSelection(_Model):
    namespace: str = "default"
    label_selector: dict[str, Any] = {}
    count: int = Field(default=1, ge=1)


class HookOutage(_Model):
    replica: int = Field(default=0, ge=0)
    duration: Duration
    mode: Literal["error", "timeout"] = "error"


class GitHubOutage(_Model):
    duration: Duration
    mode: Literal["error", "rateLimit"] = "error"


class ListenerKnobs(_Model):
    """`arc-hooks listen` replicas (none unless asked for) and the simulated scale-set
    service they reach."""

    replicas: int = Field(default=0, ge=0)
    poll_seconds: Duration = Field(default=2.0, gt=0)
    refresh_seconds: Duration = Field(default=30.0, gt=0)
    session_timeout: Duration = Field(default=300.0, gt=0)
    assign_delay: Duration = 0.0


class ListenerRestart(_Model):
    """Stop a listener replica and start it again `down` later; `crash` leaves its sessions
    behind (they expire after the service's session timeout), else they are deleted."""

    replica: int = Field(default=0, ge=0)
    down: Duration = 0.0
    crash: bool = False


class BrokerOutage(_Model):
    duration: Duration


class TimelineEntry(_Model):
    """One timed action; exactly one action field is set."""

    at: Duration
    apply: dict[str, Any] | None = None
    delete: ObjectRef | None = None
    evict_pods: PodSelection | None = None
    delete_pods: PodSelection | None = None
    lose_node: str | None = None
    drain_node: str | None = None
    add_node: str | None = None
    hook_outage: HookOutage | None = None
    github_outage: GitHubOutage | None = None
    restart_listener: ListenerRestart | None = None
    broker_outage: BrokerOutage | None = None

    @model_validator(mode="after")
    def _one_action(self) -> TimelineEntry:
        actions = [name for name in ACTIONS if getattr(self, name) is not None]
        if len(actions) != 1:
            wanted = ", ".join(to_camel(name) for name in ACTIONS)
            raise ValueError(f"exactly one action is needed, one of: {wanted}")
        return self

    @property
    def action(self) -> str:
        return next(name for name in ACTIONS if getattr(self, name) is not None)


ACTIONS = (
    "apply",
    "delete",
    "evict_pods",
    "delete_pods",
    "drain_node",
    "lose_node",
    "add_node",
    "hook_outage",
    "github_outage",
    "restart_listener",
    "broker_outage",
)


class JobStream(_Model):
    """`count` jobs, the first at `start`, then one every `every`, each lasting `duration`."""

    repository: str = Field(pattern=r"^[^/]+/[^/]+$")
    labels: list[str] = ["self-hosted"]
    count: int = Field(default=1, ge=0)
    start: Duration = 0.0
    every: Duration = 0.0
    duration: Duration = 60.0


class Scenario(_Model):
    name: str
    seed: int = 1
    duration: Duration = 3600.0
    hook_replicas: int = Field(default=2, ge=1)
    settings: dict[str, str | int | float | bool] = {}
    github: GitHubKnobs = GitHubKnobs()
    webhooks: WebhookKnobs = WebhookKnobs()
    cluster: ClusterKnobs = ClusterKnobs()
    metacontroller: MetacontrollerKnobs = MetacontrollerKnobs()
    listeners: ListenerKnobs = ListenerKnobs()
    organizations: dict[str, str] = Field(
        default={}, description="organization -> enterprise, for enterprise runners"
    )
    objects: list[dict[str, Any]] = []
    timeline: list[TimelineEntry] = []
    jobs: list[JobStream] = []
    teardown: bool = True
    quiet_period: Duration = Field(
        default=7200.0, description="how long teardown may take to settle before giving up"
    )

    @model_validator(mode="after")
    def _objects_are_manifests(self) -> Scenario:
        for index, obj in enumerate(self.objects):
            _check_manifest(obj, f"objects[{index}]")
        for index, entry in enumerate(self.timeline):
            if entry.apply is not None:
                _check_manifest(entry.apply, f"timeline[{index}].apply")
        return self

    @model_validator(mode="after")
    def _timeline_can_happen(self) -> Scenario:
        """A typo in the timeline would otherwise test nothing, silently: an action after the
        end, a hook or listener replica or a node the run does not have."""
        nodes = {f"node-{i + 1}" for i in range(self.cluster.nodes)}
        for index, entry in sorted(enumerate(self.timeline), key=lambda pair: pair[1].at):
            where = f"timeline[{index}]"
            if entry.at > self.duration:
                raise ValueError(
                    f"{where}: at {entry.at:g} s, after the scenario's duration "
                    f"({self.duration:g} s): it would never happen"
                )
            outage = entry.hook_outage
            if outage is not None and outage.replica >= self.hook_replicas:
                raise ValueError(
                    f"{where}.hookOutage.replica: {outage.replica}, but hook replicas are "
                    f"numbered from 0 to {self.hook_replicas - 1} (hookReplicas)"
                )
            restart = entry.restart_listener
            if restart is not None and restart.replica >= self.listeners.replicas:
                raise ValueError(
                    f"{where}.restartListener.replica: {restart.replica}, but the run has "
                    f"{self.listeners.replicas} listener replica(s) (listeners.replicas)"
                )
            for field in ("lose_node", "drain_node"):
                node = getattr(entry, field)
                if node is not None and node not in nodes:
                    known = ", ".join(sorted(nodes)) or "none"
                    raise ValueError(
                        f"{where}.{to_camel(field)}: no node {node!r} at that time "
                        f"(nodes: {known}; cluster.nodes and addNode make them)"
                    )
            if entry.add_node is not None:
                nodes.add(entry.add_node)
            if entry.lose_node is not None:
                nodes.discard(entry.lose_node)
        return self


def stressed(scenario: Scenario) -> Scenario:
    """`simulate --stress`: the same scenario with Metacontroller's stress profile on top."""
    knobs = scenario.metacontroller.model_copy(update={"stress": True})
    return scenario.model_copy(update={"metacontroller": knobs})


def _check_manifest(obj: dict[str, Any], where: str) -> None:
    for field in ("apiVersion", "kind"):
        if not isinstance(obj.get(field), str):
            raise ValueError(f"{where}.{field} is required")
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
        raise ValueError(f"{where}.metadata.name is required")


class ScenarioError(Exception):
    """A scenario file that cannot be used, with a message that names the problem."""


def load_scenario(source: str | Path) -> Scenario:
    """From a path, or from YAML text."""
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source):
        path = Path(source)
        try:
            text = path.read_text()
        except OSError as error:
            raise ScenarioError(f"cannot read {path}: {error.strerror}") from None
    else:
        text = str(source)
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ScenarioError(f"not valid YAML: {error}") from None
    if not isinstance(document, dict):
        raise ScenarioError("a scenario is a YAML mapping with at least `name`")
    try:
        return Scenario.model_validate(document)
    except ValidationError as error:
        raise ScenarioError(describe(error)) from None


def describe(error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        where = ""
        for part in item["loc"]:
            where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = "unknown field"
        lines.append(f"{where or 'scenario'}: {message}")
    return "; ".join(lines)
