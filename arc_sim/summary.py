"""What a simulated run reports: figures, and the invariants that must hold."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from arc_sim.github_jobs import SimJob, covers, labels_match
from arc_sim.github_state import IMPLICIT_LABELS
from hooks.github.port import Scope
from hooks.scale_set_mode import SCALE_SET_ANNOTATION

ARC_API_GROUP = "actions.summerwind.dev"
RUNNER_CONFIG_PATHS: Mapping[str, tuple[str, ...]] = {
    "Runner": ("spec",),
    "RunnerSet": ("spec",),
    "RunnerDeployment": ("spec", "template", "spec"),
    "RunnerReplicaSet": ("spec", "template", "spec"),
}
"""Where each kind that makes runners keeps the runners' scope and labels."""


@dataclass(frozen=True)
class RunnerTarget:
    """What the runners of one applied object ask GitHub for: a scope and labels."""

    scope: Scope
    labels: tuple[str, ...]

    def could_take(
        self, repository: str, labels: Iterable[str], enterprise_of: Callable[[str], str | None]
    ) -> bool:
        """GitHub's rule (arc_sim/github_jobs.py): the scope covers the job's repository and
        the runner's labels, the implicit ones included, hold every label the job asks for."""
        return covers(self.scope, repository, enterprise_of) and labels_match(
            (*IMPLICIT_LABELS, *self.labels), labels
        )


def runner_target(obj: Mapping[str, Any]) -> RunnerTarget | None:
    """The target of a Runner, RunnerDeployment, RunnerReplicaSet or RunnerSet manifest; None
    for other objects and for one without a scope."""
    path = RUNNER_CONFIG_PATHS.get(str(obj.get("kind")))
    if path is None or not str(obj.get("apiVersion", "")).startswith(ARC_API_GROUP + "/"):
        return None
    config: Any = obj
    for step in path:
        config = config.get(step) if isinstance(config, dict) else None
    if not isinstance(config, dict):
        return None
    scope = Scope(
        enterprise=_text(config.get("enterprise")),
        organization=_text(config.get("organization")),
        repository=_text(config.get("repository")),
    )
    if not (scope.enterprise or scope.organization or scope.repository):
        return None
    raw = config.get("labels")
    labels = tuple(str(label) for label in raw) if isinstance(raw, list) else ()
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    scale_set = annotations.get(SCALE_SET_ANNOTATION) if isinstance(annotations, dict) else None
    if isinstance(scale_set, str) and scale_set.strip():
        # Members of a runner scale set: they take the jobs that ask for its name, its one
        # label, and no others.
        labels = (scale_set.strip(),)
    return RunnerTarget(scope, labels)


def unservable(
    jobs: Iterable[SimJob],
    targets: Iterable[RunnerTarget],
    enterprise_of: Callable[[str], str | None],
) -> list[SimJob]:
    """The jobs no target could ever take, whatever runners it made and whenever."""
    wanted = list(targets)
    return [
        job
        for job in jobs
        if not any(t.could_take(job.repository, job.labels, enterprise_of) for t in wanted)
    ]


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class JobFigures(_Model):
    submitted: int = 0
    completed: int = 0
    interrupted: int = 0
    waiting: int = 0
    unservable: int = 0  # no runner set of the scenario could ever take them (in `waiting`)
    p50_queue_seconds: float = 0.0
    max_queue_seconds: float = 0.0


class RunnerFigures(_Model):
    created: int = 0
    peak: int = 0
    registered_at_end: int = 0
    leaked_registrations: int = 0


class GitHubFigures(_Model):
    api_calls: int = 0
    rate_limited: int = 0
    # The most of an hour's rate-limit budget one credential used within a window, in percent
    # (100 minus this is the headroom left at the tightest moment).
    peak_budget_percent: float = 0.0
    by_endpoint: dict[str, int] = {}


class HookFigures(_Model):
    calls: int = 0
    errors: int = 0
    by_path: dict[str, int] = {}
    timeouts_exceeded: int = 0  # slower than the hook timeout by themselves
    injected_timeouts: int = 0  # to a replica a hookOutage broke on purpose
    max_latency_seconds: float = 0.0
    conflicts: int = 0  # 409s Metacontroller's writes met
    max_informer_lag_seconds: float = 0.0
    client_rate_limit_waits: int = 0  # requests that waited for the API client's rate limit
    client_rate_limit_wait_seconds: float = 0.0  # their waits together


class ApiFigures(_Model):
    """The Kubernetes API server: what the scenario applied, and what it refused or pruned."""

    applied: int = 0  # scenario applies (t=0 and timeline) accepted
    failed_applies: int = 0  # refused: the object never existed as written
    failures: list[str] = []  # each failed apply, with the API server's message
    refused_writes: int = 0  # every write refused, by any client (controllers too)
    pruned_fields: int = 0  # unknown fields dropped from objects written (its warnings)


class Invariants(_Model):
    no_interrupted_jobs: bool = True
    no_leaked_registrations: bool = True
    converged: bool = True
    no_hook_timeouts: bool = True  # no hook call exceeded its timeout by itself
    no_failed_applies: bool = True  # the API server accepted every object the scenario applied
    servable_jobs_completed: bool = True  # every job some runner set could take has finished

    def hold(self) -> bool:
        return all(held for _, held in self)

    def failed(self) -> list[str]:
        return [to_camel(name) for name, held in self if not held]


class Summary(_Model):
    scenario: str
    seed: int
    virtual_seconds: float
    wall_seconds: float = 0.0
    jobs: JobFigures = JobFigures()
    runners: RunnerFigures = RunnerFigures()
    github: GitHubFigures = GitHubFigures()
    hooks: HookFigures = HookFigures()
    api: ApiFigures = ApiFigures()
    problems: list[str] = []
    """What the scenario's own objects reported wrong when its time was up (a condition saying
    the spec is invalid, scaling failed, the runner failed), before the teardown: why an
    invariant may not hold."""
    invariants: Invariants = Invariants()

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json")

    def table(self) -> str:
        """A human summary, one figure per line."""
        rows = [
            ("scenario", f"{self.scenario} (seed {self.seed})"),
            (
                "virtual time",
                f"{self.virtual_seconds / 60:.1f} min ({self.wall_seconds:.1f} s wall)",
            ),
            (
                "jobs",
                f"{self.jobs.submitted} submitted, {self.jobs.completed} completed, "
                f"{self.jobs.interrupted} interrupted, {self.jobs.waiting} waiting "
                f"({self.jobs.unservable} unservable)",
            ),
            (
                "queue time",
                f"p50 {self.jobs.p50_queue_seconds:.0f} s, max {self.jobs.max_queue_seconds:.0f} s",
            ),
            (
                "runners",
                f"{self.runners.created} created, peak {self.runners.peak}, "
                f"{self.runners.registered_at_end} registered at end, "
                f"{self.runners.leaked_registrations} leaked",
            ),
            (
                "GitHub API",
                f"{self.github.api_calls} calls, {self.github.rate_limited} rate limited, "
                f"peak {self.github.peak_budget_percent:g}% of an hour's budget",
            ),
            ("hooks", f"{self.hooks.calls} calls, {self.hooks.errors} errors"),
            (
                "metacontroller",
                f"{self.hooks.timeouts_exceeded} calls over the timeout, slowest "
                f"{self.hooks.max_latency_seconds:.2f} s, {self.hooks.conflicts} conflicts, "
                f"informer lag up to {self.hooks.max_informer_lag_seconds:.2f} s, "
                f"{self.hooks.client_rate_limit_waits} requests waited for the client rate "
                f"limit ({self.hooks.client_rate_limit_wait_seconds:.0f} s)",
            ),
        ]
        rows.append(
            (
                "kubernetes API",
                f"{self.api.applied} applied, {self.api.failed_applies} failed applies, "
                f"{self.api.refused_writes} writes refused, "
                f"{self.api.pruned_fields} unknown fields pruned",
            )
        )
        rows += [("failed apply", failure) for failure in self.api.failures]
        rows += [("condition", problem) for problem in self.problems]
        for name, held in self.invariants:
            rows.append((to_camel(name), "ok" if held else "FAILED"))
        width = max(len(name) for name, _ in rows)
        return "\n".join(f"{name.ljust(width)}  {value}" for name, value in rows)
