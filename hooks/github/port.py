"""The GitHub port: the small surface the controller logic needs from GitHub.

The logic layer depends on this Protocol only. The PyGithub adapter implements it for real
GitHub (and GitHub Enterprise Server); tests use the fake GitHub in `arc_sim`.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from operator import attrgetter
from typing import Any, Protocol, overload


@dataclass(frozen=True)
class Scope:
    """Where runners are registered: exactly one of enterprise, organization, repository."""

    enterprise: str = ""
    organization: str = ""
    repository: str = ""  # "owner/name"

    @property
    def api_path(self) -> str:
        """The REST prefix of this scope, e.g. `/orgs/acme`."""
        if self.repository:
            return f"/repos/{self.repository}"
        if self.organization:
            return f"/orgs/{self.organization}"
        return f"/enterprises/{self.enterprise}"

    @property
    def kind(self) -> str:
        if self.repository:
            return "repository"
        if self.organization:
            return "organization"
        return "enterprise"

    def __str__(self) -> str:
        return self.api_path


@dataclass(frozen=True)
class GitHubRunner:
    id: int
    name: str
    status: str  # "online" | "offline" (GitHub does not enumerate it)
    busy: bool
    labels: tuple[str, ...] = ()
    ephemeral: bool | None = None
    runner_group_id: int | None = None

    @property
    def online(self) -> bool:
        return self.status == "online"


REPORT_CLOCK_SKEW = timedelta(minutes=1)
"""How far ahead of a replica's clock another's may run: a report time further ahead (a clock
far off, a hand's edit) is not believed."""


def credible_report_time(recorded: datetime | None, now: datetime) -> datetime | None:
    """When a Runner's status says GitHub listed what it reports (`lastRegistrationCheckTime`),
    unless that is further ahead of `now` than clocks differ: a time far ahead would outrank
    every list until then, and freeze what status reports."""
    if recorded is None or recorded > now + REPORT_CLOCK_SKEW:
        return None
    return recorded


@dataclass(frozen=True, slots=True)
class RunnerListing(Sequence[GitHubRunner]):
    """A scope's runners as GitHub listed them when asked at `asked_at` (None: not known).

    Replicas list at different moments, so a hook call may read a list older than the view a
    Runner's status already reports; the date lets it tell (`hooks.runner.decide`)."""

    runners: tuple[GitHubRunner, ...] = ()
    asked_at: datetime | None = None
    # Until when the cache serves this list: the next one is asked for then (None: not known).
    # A watched Runner looks again just after (`hooks.lifecycle.incarnation.next_list_wait`).
    # How long a list is served says nothing of what it lists: not compared.
    fresh_until: datetime | None = field(default=None, compare=False)
    # Each Runner's sync looks its own name up in the one list the cache shares: a scan each
    # would cost the square of the runners. Built at the first lookup (None until then), and
    # carried over to a listing derived by one change (`without` and the others): a teardown
    # changes the list once per runner.
    _by_name: dict[str, GitHubRunner] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", None)

    @classmethod
    def of(cls, runners: Sequence[GitHubRunner]) -> RunnerListing:
        return runners if isinstance(runners, RunnerListing) else cls(tuple(runners))

    def named(self, name: str) -> GitHubRunner | None:
        return self._names().get(name)

    def busy_now(self, name: str, reported: bool, reported_at: datetime | None) -> bool:
        """Whether runner `name` is busy, where a Runner's status reports `reported` as of a
        list asked at `reported_at`: this list's word when it is at least as new (a status
        may mirror a list minutes old, `hooks.lifecycle.incarnation.steady_watch_wait`); the
        status's for a runner this list does not have (an ephemeral one gone with its job) or
        when it reports a newer list (another replica's); either's when this list's age is
        not known."""
        found = self.named(name)
        if found is None:
            return reported
        if self.asked_at is None:
            return found.busy or reported
        if reported_at is not None and self.asked_at < reported_at:
            return reported
        return found.busy

    def without(self, runner_id: int) -> RunnerListing:
        """The listing without runner `runner_id`; this one when it does not list it."""
        index = self._only_position(runner_id)
        if index is None:
            kept = tuple(r for r in self.runners if r.id != runner_id)
            return self if len(kept) == len(self.runners) else replace(self, runners=kept)
        gone = self.runners[index]
        return self._derived(self.runners[:index] + self.runners[index + 1 :], gone.name, ())

    def marked_busy(self, runner_id: int) -> RunnerListing:
        """The listing with runner `runner_id` busy; this one when it does not list it."""
        index = self._only_position(runner_id)
        if index is None:
            if all(r.id != runner_id for r in self.runners):
                return self
            marked = (replace(r, busy=True) if r.id == runner_id else r for r in self.runners)
            return replace(self, runners=tuple(marked))
        busy = replace(self.runners[index], busy=True)
        runners = (*self.runners[:index], busy, *self.runners[index + 1 :])
        return self._derived(runners, busy.name, (busy,))

    def corrected(self, name: str, found: tuple[GitHubRunner, ...]) -> RunnerListing:
        """The listing with the runners named `name` replaced by `found`, put last."""
        if self._one_per_name():
            listed = self.named(name)
            if listed is None:
                return self._derived((*self.runners, *found), name, found)
            index = self._only_position(listed.id)
            if index is not None:
                kept = self.runners[:index] + self.runners[index + 1 :]
                return self._derived((*kept, *found), name, found)
        kept = tuple(r for r in self.runners if r.name != name)
        return replace(self, runners=(*kept, *found))

    def _only_position(self, runner_id: int) -> int | None:
        """Where the one runner of `runner_id` is listed; None when none is, or several are
        (GitHub's ids are unique, but a list read page by page may repeat a runner)."""
        ids = list(map(_runner_id, self.runners))
        return ids.index(runner_id) if ids.count(runner_id) == 1 else None

    def _names(self) -> dict[str, GitHubRunner]:
        by_name = self._by_name
        if by_name is None:
            by_name = {}
            for runner in self.runners:
                by_name.setdefault(runner.name, runner)  # the first of a name, as listed
            object.__setattr__(self, "_by_name", by_name)
        return by_name

    def _one_per_name(self) -> bool:
        return len(self._names()) == len(self.runners)

    def _derived(
        self, runners: tuple[GitHubRunner, ...], name: str, entries: tuple[GitHubRunner, ...]
    ) -> RunnerListing:
        """A listing of `runners`, which differ from these in the one runner named `name`
        only, now `entries`: the name index is carried over when each name has one runner."""
        listing = replace(self, runners=runners)
        if self._by_name is not None and len(self._by_name) == len(self.runners):
            by_name = dict(self._by_name)
            by_name.pop(name, None)
            for runner in entries:
                by_name.setdefault(runner.name, runner)
            object.__setattr__(listing, "_by_name", by_name)
        return listing

    def older_than(self, moment: datetime | None) -> bool:
        return moment is not None and self.asked_at is not None and self.asked_at < moment

    @overload
    def __getitem__(self, index: int) -> GitHubRunner: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[GitHubRunner, ...]: ...

    def __getitem__(self, index: int | slice) -> GitHubRunner | tuple[GitHubRunner, ...]:
        return self.runners[index]

    def __len__(self) -> int:
        return len(self.runners)

    def __iter__(self) -> Iterator[GitHubRunner]:
        return iter(self.runners)


_runner_id = attrgetter("id")


@dataclass(frozen=True)
class RegistrationToken:
    token: str = field(repr=False)
    expires_at: datetime


@dataclass(frozen=True)
class JitConfig:
    runner: GitHubRunner
    encoded_jit_config: str = field(repr=False)


class RemoveOutcome(enum.Enum):
    REMOVED = "removed"  # 204
    NOT_FOUND = "not_found"  # 404: already gone
    BUSY = "busy"  # 422 "is still running a job"
    RATE_LIMITED = "rate_limited"  # 403/429 with the rate-limit signals
    FORBIDDEN = "forbidden"  # 403 that is not a rate limit
    ERROR = "error"  # anything else (5xx, transport error, unexpected 4xx)


@dataclass(frozen=True)
class RemoveResult:
    outcome: RemoveOutcome
    retry_after: float | None = None  # seconds, for RATE_LIMITED
    message: str = ""


DEFAULT_RUNNER_GROUP_ID = 1
"""GitHub's "Default" runner group; the only one a repository has."""


def pick_runner_group(groups: Sequence[Mapping[str, Any]], group_name: str) -> int:
    """The id of the named group among GitHub's `runner_groups` (the default group when the
    name is empty): an exact name first, then one that differs in case only."""
    # An enterprise's groups shared with the organization (`inherited`) take enterprise
    # runners only: an organization runner registers in one of the organization's own.
    groups = [group for group in groups if not group.get("inherited")]
    if not group_name:
        for group in groups:
            if group.get("default"):
                return int(group["id"])
        return DEFAULT_RUNNER_GROUP_ID
    names = [(str(group.get("name", "")), group) for group in groups]
    for name, group in names:
        if name == group_name:
            return int(group["id"])
    for name, group in names:
        if name.casefold() == group_name.casefold():
            return int(group["id"])
    raise GitHubError(f"no runner group named {group_name!r}", 404)


def repository_runner_group(scope: Scope, group_name: str) -> int:
    """Repositories have no runner groups: their runners belong to the default group."""
    if group_name in ("", "Default", "default"):
        return DEFAULT_RUNNER_GROUP_ID
    raise GitHubError(
        f"runner group {group_name!r} in {scope}: "
        "runner groups exist only for organizations and enterprises"
    )


@dataclass(frozen=True)
class WorkflowRun:
    """A workflow run as the pull metric reads it."""

    id: int  # 0 when GitHub gave none: its jobs cannot be listed
    status: str


@dataclass(frozen=True)
class WorkflowJob:
    status: str
    labels: tuple[str, ...] = ()
    id: int = 0


@dataclass(frozen=True)
class RunnerGroupInfo:
    """An organization's runner group (`runner_groups` items of the REST API)."""

    id: int
    name: str
    default: bool = False
    inherited: bool = False  # the enterprise's group, shared with the organization


class GitHubError(Exception):
    """A GitHub call failed. The message never carries a credential or a token."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


MAX_RATE_LIMIT_WAIT = 3600.0
"""The longest wait a rate limit imposes: GitHub's primary limit resets within its hour."""


class RateLimitedError(GitHubError):
    """GitHub asked us to wait: do not call again before `retry_after` seconds (at most
    `MAX_RATE_LIMIT_WAIT`: a wait from elsewhere than GitHub, even an infinite one, is one the
    caller can schedule)."""

    def __init__(self, message: str, retry_after: float, status: int | None = None) -> None:
        super().__init__(message, status)
        if not math.isfinite(retry_after) or retry_after > MAX_RATE_LIMIT_WAIT:
            retry_after = MAX_RATE_LIMIT_WAIT
        self.retry_after = max(retry_after, 0.0)


class ConflictError(GitHubError):
    """409: e.g. a JIT config for a runner name that is already registered."""


class GitHubPort(Protocol):
    def list_runners(
        self, scope: Scope, *, not_before: datetime | None = None
    ) -> Sequence[GitHubRunner]:
        """Every runner registered in the scope (all pages). May be served from a cache, but
        not from an answer obtained before `not_before` (the caller has observed a fact since,
        e.g. the runner's container exited, that an older answer may contradict)."""
        ...

    def runners_named(
        self, scope: Scope, name: str, *, not_before: datetime | None = None
    ) -> Sequence[GitHubRunner]:
        """The runners registered in the scope under `name` (GitHub keeps at most one),
        asked for by name (`?name=`): one page, however many runners the scope has. May be
        served from a cached list, but not from an answer obtained before `not_before`."""
        ...

    def registration_token(self, scope: Scope) -> RegistrationToken:
        """A registration token with at least 30 minutes of validity left (while GitHub
        refuses a new one, the cache hands out its last while 10 minutes are left)."""
        ...

    def generate_jit_config(
        self,
        scope: Scope,
        name: str,
        labels: Sequence[str],
        runner_group_id: int,
        work_folder: str,
    ) -> JitConfig:
        """Register a just-in-time runner; raises ConflictError when the name is taken."""
        ...

    def runner_group_id(self, scope: Scope, group_name: str) -> int:
        """The id of a runner group by name (the default group when the name is empty)."""
        ...

    def remove_runner(
        self, scope: Scope, runner_id: int, *, not_before: datetime | None = None
    ) -> RemoveResult:
        """Unregister a runner; never raises for an answer GitHub gave. An answer remembered
        from before `not_before` is not reused."""
        ...

    def list_workflow_runs(self, repository: str, status: str) -> Sequence[WorkflowRun]:
        """Runs of `owner/name` listed with this status filter (`queued`, `in_progress`),
        every page, as ARC reads them. May be served from a short-lived cache."""
        ...

    def list_workflow_jobs(self, repository: str, run_id: int) -> Sequence[WorkflowJob]:
        """Every job of a run (all pages). May be served from a short-lived cache."""
        ...

    def visible_runner_groups(
        self, organization: str, repository_name: str
    ) -> Sequence[RunnerGroupInfo]:
        """The organization's runner groups (inherited ones included) that the repository
        may use: `GET /orgs/{org}/actions/runner-groups?visible_to_repository=` (all pages)."""
        ...
