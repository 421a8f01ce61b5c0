"""What a simulated run reports: figures, and the invariants that must hold."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class JobFigures(_Model):
    submitted: int = 0
    completed: int = 0
    interrupted: int = 0
    waiting: int = 0
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
    by_endpoint: dict[str, int] = {}


class HookFigures(_Model):
    calls: int = 0
    errors: int = 0
    by_path: dict[str, int] = {}


class Invariants(_Model):
    no_interrupted_jobs: bool = True
    no_leaked_registrations: bool = True
    converged: bool = True

    def hold(self) -> bool:
        return self.no_interrupted_jobs and self.no_leaked_registrations and self.converged

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
                f"{self.jobs.interrupted} interrupted, {self.jobs.waiting} waiting",
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
                f"{self.github.api_calls} calls, {self.github.rate_limited} rate limited",
            ),
            ("hooks", f"{self.hooks.calls} calls, {self.hooks.errors} errors"),
        ]
        for name, held in self.invariants:
            rows.append((to_camel(name), "ok" if held else "FAILED"))
        width = max(len(name) for name, _ in rows)
        return "\n".join(f"{name.ljust(width)}  {value}" for name, value in rows)
