"""State of the fake GitHub: runners, tokens, runner groups, workflow jobs, API budgets and
injected faults.

Plain Python with no HTTP in it. The REST layer (`arc_sim.github_api`) reads and changes it one
request at a time; tests and the simulated runners drive it through the public methods.
Time comes only from the injected clock.

Jobs: `submit_job` queues one; GitHub's rule (`arc_sim.github_jobs`) hands it to an online,
idle runner that may take it; the runner agent attached to that runner is told (`assign`) and
later reports `complete_job` or `interrupt_job`. Whoever should hear about a change (runner
agents, webhook senders) is called once the state operation is over and the lock released, so
a callback always sees a consistent state and may call back in.
"""

from __future__ import annotations

import base64
import fnmatch
import functools
import json
import random
import string
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from operator import attrgetter
from typing import Any, Concatenate, Literal, ParamSpec, Protocol, TypeVar

import jwt

from arc_sim.github_jobs import (
    DEFAULT_BRANCH,
    DEFAULT_JOB_NAME,
    DEFAULT_WORKFLOW,
    JobAction,
    JobBook,
    JobEvent,
    JobSummary,
    JobTaker,
    SimJob,
    WorkflowRun,
    covers,
    labels_match,
)
from hooks.clock import Clock
from hooks.github.port import GitHubRunner, Scope

DEFAULT_RUNNER_GROUP_ID = 1
# config.sh gives every runner it registers these, on a Linux x64 machine.
IMPLICIT_LABELS = ("self-hosted", "Linux", "X64")
# Label names GitHub types as read-only (the runner reports them itself) rather than custom.
READ_ONLY_LABELS = frozenset(
    {"self-hosted", "linux", "windows", "macos", "x64", "x86", "arm", "arm64"}
)
RUNNER_VERSION = "2.330.0"
UNAUTHENTICATED_LIMIT_PER_HOUR = 60
RATE_LIMIT_WINDOW = timedelta(hours=1)
# GitHub refuses app JWTs that live over 10 minutes; clients backdate `iat` by 60 s for clock skew.
MAX_JWT_LIFETIME_SECONDS = 600 + 60
JWT_CLOCK_SKEW_SECONDS = 60

DEFAULT_ERROR_STATUSES = (500, 502, 503)

LabelType = Literal["read-only", "custom"]
TokenKind = Literal["registration", "remove", "installation"]
CallerKind = Literal["user", "installation", "app", "anonymous"]
OwnerType = Literal["Organization", "User"]
JobListener = Callable[[JobEvent], None]


class FakeGitHubError(Exception):
    """Something GitHub would refuse."""


class NotFoundError(FakeGitHubError):
    pass


class NameTakenError(FakeGitHubError):
    """A runner with this name is already registered in the scope."""


class RunnerBusyError(FakeGitHubError):
    def __init__(self, runner_name: str) -> None:
        super().__init__(f'Runner "{runner_name}" is still running a job')
        self.runner_name = runner_name


class InvalidTokenError(FakeGitHubError):
    """A registration or remove token that is unknown, expired, of the wrong kind or scope."""


class InvalidJitConfigError(FakeGitHubError):
    """A JIT config that is unknown, already used, or whose runner was deleted."""


class AuthenticationError(FakeGitHubError):
    """Credentials GitHub would answer 401 to; the message is GitHub's."""


@dataclass(frozen=True)
class RunnerLabel:
    id: int
    name: str
    type: LabelType


@dataclass(frozen=True)
class RunnerRecord:
    """A registered runner as GitHub stores it: the source of the REST `runner` object."""

    id: int
    name: str
    scope: Scope
    labels: tuple[RunnerLabel, ...]
    runner_group_id: int
    ephemeral: bool
    os: str
    status: str = "offline"
    busy: bool = False
    version: str | None = None  # GitHub sets it once the runner has connected
    scale_set_id: int | None = None  # a member of a runner scale set (registered by its JIT)

    def to_port(self) -> GitHubRunner:
        return GitHubRunner(
            id=self.id,
            name=self.name,
            status=self.status,
            busy=self.busy,
            labels=tuple(label.name for label in self.labels),
            ephemeral=self.ephemeral,
            runner_group_id=self.runner_group_id,
        )


@dataclass(frozen=True)
class IssuedToken:
    value: str = field(repr=False)
    kind: TokenKind
    expires_at: datetime
    scope: Scope | None = None  # registration and remove tokens
    installation_id: int | None = None  # installation tokens


@dataclass(frozen=True)
class RunnerGroup:
    id: int
    name: str
    visibility: str = "all"  # all | selected | private
    default: bool = False
    # An organization's group: "owner/name" of the repositories that may use it.
    selected_repositories: tuple[str, ...] = ()
    # An enterprise's group: the organizations it is shared with.
    selected_organizations: tuple[str, ...] = ()

    def visible_to(self, repository: str) -> bool:
        """An organization's group: whether `repository` ("owner/name") may use it."""
        if self.visibility != "selected":
            return True
        return repository.casefold() in {r.casefold() for r in self.selected_repositories}

    def shared_with(self, organization: str) -> bool:
        """An enterprise's group: whether `organization` inherits it."""
        if self.visibility != "selected":
            return True
        return organization.casefold() in {o.casefold() for o in self.selected_organizations}


@dataclass(frozen=True)
class Caller:
    """Who a request is charged to: GitHub keeps one budget per user, installation, app or IP."""

    kind: CallerKind
    id: str


@dataclass(frozen=True)
class RateBudget:
    limit: int
    reset_at: datetime
    used: int = 0

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)


@dataclass
class _Fault:
    status: int
    remaining: int
    method: str | None
    path: str | None  # fnmatch pattern over the request path without the /api/v3 prefix

    def matches(self, method: str, path: str) -> bool:
        if self.method is not None and self.method.upper() != method.upper():
            return False
        return self.path is None or fnmatch.fnmatchcase(path, self.path)


@dataclass(frozen=True)
class FaultKnobs:
    """Faults a scenario sets for the whole run: a share of requests answered with a 5xx picked
    by the seeded random generator, and a latency charged to each request in the log."""

    error_rate: float = 0.0
    error_statuses: tuple[int, ...] = DEFAULT_ERROR_STATUSES
    latency_seconds: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.error_rate <= 1.0:
            raise ValueError(f"error_rate must be between 0 and 1, not {self.error_rate}")
        if not self.error_statuses or any(not 500 <= s <= 599 for s in self.error_statuses):
            raise ValueError(f"error_statuses must be 5xx statuses, not {self.error_statuses}")
        if self.latency_seconds < 0:
            raise ValueError(f"latency must not be negative, not {self.latency_seconds}")

    @classmethod
    def from_mapping(cls, config: Mapping[str, Any]) -> FaultKnobs:
        """From a scenario's `github:` section: `error_rate`, `error_statuses`, `latency`
        (seconds). Unknown keys are refused, so a typo cannot silently disable a fault."""
        known = {"error_rate", "error_statuses", "latency"}
        unknown = set(config) - known
        if unknown:
            raise ValueError(f"unknown GitHub fault settings: {sorted(unknown)}")
        return cls(
            error_rate=float(config.get("error_rate", 0.0)),
            error_statuses=tuple(
                int(s) for s in config.get("error_statuses", DEFAULT_ERROR_STATUSES)
            ),
            latency_seconds=float(config.get("latency", 0.0)),
        )


@dataclass(frozen=True)
class RequestRecord:
    method: str
    route: str | None  # the path template, e.g. "/orgs/{org}/actions/runners"; None if unrouted
    path: str
    status: int
    at: datetime
    caller: CallerKind
    latency_seconds: float
    caller_id: str = ""  # which user, installation or app: one rate-limit budget each


_P = ParamSpec("_P")
_R = TypeVar("_R")


class ScaleSetRouter(Protocol):
    """The Actions service's side of runner scale sets (arc_sim/scaleset_broker.py), told of
    jobs and runners under the state's own lock.

    A job it claims waits until it is assigned to a scale set (`assign_to_scale_set`), and is
    then taken only by a runner of that scale set; a scale set's runners take no other job."""

    def claim(self, job: SimJob) -> bool: ...

    def started(self, job: SimJob, runner: RunnerRecord) -> None: ...

    def finished(self, job: SimJob) -> None: ...

    def runner_removed(self, runner_id: int) -> None: ...


def _synchronized(
    method: Callable[Concatenate[GitHubState, _P], _R],
) -> Callable[Concatenate[GitHubState, _P], _R]:
    @functools.wraps(method)
    def locked(self: GitHubState, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self.atomic():
            return method(self, *args, **kwargs)

    return locked


def _key(scope: Scope) -> str:
    # GitHub owner and repository names are case-insensitive.
    return scope.api_path.casefold()


def _github_url(scope: Scope) -> str:
    if scope.repository:
        return f"https://github.com/{scope.repository}"
    if scope.organization:
        return f"https://github.com/{scope.organization}"
    return f"https://github.com/enterprises/{scope.enterprise}"


def _b64_json(value: object) -> str:
    return base64.b64encode(json.dumps(value, separators=(",", ":")).encode()).decode()


class GitHubState:
    """Everything the fake GitHub knows. Every public method is atomic under `lock`."""

    def __init__(
        self,
        clock: Clock,
        *,
        token_ttl_seconds: float = 3600,
        rate_limit_per_hour: int = 5000,
        seed: int = 0,
    ) -> None:
        self.clock = clock
        self.token_ttl = timedelta(seconds=token_ttl_seconds)
        self.rate_limit_per_hour = rate_limit_per_hour
        # The loopback server handles requests on its own thread while tests and the simulated
        # world change the state from theirs.
        self.lock = threading.RLock()
        self.requests: list[RequestRecord] = []
        self.latency_seconds = 0.0
        self._random = random.Random(seed)
        self._next_runner_id = 1
        self._runners: dict[str, dict[int, RunnerRecord]] = {}
        # Per scope: each runner's id by its name, casefolded (names are unique per scope and
        # GitHub compares them without case); looked up at every registration.
        self._ids_by_name: dict[str, dict[str, int]] = {}
        self._label_ids: dict[str, int] = {}
        self._groups: dict[str, list[RunnerGroup]] = {}
        self._tokens: dict[str, IssuedToken] = {}
        self._jit_configs: dict[str, tuple[Scope, int]] = {}
        self._used_jit_configs: set[str] = set()
        self._personal_tokens: dict[str, Caller] = {}
        self._reach: dict[Caller, frozenset[str]] = {}  # accounts a restricted PAT reaches
        self._app_public_key: str | None = None
        self._app_id: str | None = None
        self._installation_ids: frozenset[int] | None = None
        self._check_jwt_expiry = False
        self._budgets: dict[Caller, RateBudget] = {}
        self._peak_budget_use = 0.0
        self._faults: list[_Fault] = []
        self._knobs = FaultKnobs()
        # Its own generator, so turning random errors on does not change the tokens issued.
        self._fault_random = random.Random(f"{seed}:faults")
        self._secondary_until: datetime | None = None
        self._secondary_status = 429
        self._registered = 0
        self._registered_peak = 0
        # Accounts: organizations' enterprises, owners that are users, stable ids per name.
        self._enterprises: dict[str, str] = {}
        self._owner_types: dict[str, OwnerType] = {}
        self._ids: dict[tuple[str, str], int] = {}
        self._id_counts: Counter[str] = Counter()
        # Jobs: the book (read it under `lock`; jobs change only through the methods here), who
        # runs what, and who listens.
        self.job_book = JobBook()
        self._agents: dict[int, JobTaker] = {}
        self._running: dict[int, int] = {}  # runner id -> job id
        self._spent: set[int] = set()  # ephemeral runners that had their one job
        # Runners that may be handed a job now (online, idle, not spent), by id: every job
        # submitted and every runner gone idle looks for one, among thousands registered.
        self._available: dict[int, RunnerRecord] = {}
        self._job_listeners: list[JobListener] = []
        self.scale_set_router: ScaleSetRouter | None = None
        self._routed: dict[int, int | None] = {}  # job id -> scale set it is assigned to
        # Callbacks of the operation in progress, run when it is over (see `atomic`).
        self._depth = 0
        self._outbox: list[Callable[[], None]] = []

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """One atomic step of GitHub: holds the lock, and once the outermost step is over and
        the lock released, runs the callbacks it queued (agents, webhook listeners) in order."""
        pending: list[Callable[[], None]] = []
        try:
            with self.lock:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                    if self._depth == 0:
                        pending, self._outbox = self._outbox, []
        finally:
            for callback in pending:
                callback()

    # Credentials

    @_synchronized
    def add_personal_access_token(
        self, token: str, organizations: Iterable[str] | None = None
    ) -> None:
        """Accept `token` as a user's PAT; each one gets its own rate-limit budget. With
        `organizations`, it reaches only those accounts (their repositories included), as a
        fine-grained token does."""
        caller = self._personal_tokens.setdefault(
            token, Caller("user", str(len(self._personal_tokens) + 1))
        )
        if organizations is not None:
            self._reach[caller] = frozenset(organizations)

    def may_reach(self, caller: Caller, account: str | None) -> bool:
        """Whether the caller's token reaches this organization or repository owner (None:
        an enterprise or app endpoint)."""
        reach = self._reach.get(caller)
        return reach is None or (account is not None and account in reach)

    @_synchronized
    def configure_app(
        self,
        public_key_pem: str | None = None,
        *,
        app_id: int | str | None = None,
        installation_ids: Iterable[int] | None = None,
        check_jwt_expiry: bool = False,
    ) -> None:
        """Make app JWTs checked: signature (with a key), issuer, installations, expiry.

        Without a call, any well-formed RS256 JWT is accepted for any installation. The expiry
        check compares with the virtual clock, so it only suits clients that sign with it too.
        """
        self._app_public_key = public_key_pem
        self._app_id = None if app_id is None else str(app_id)
        self._installation_ids = None if installation_ids is None else frozenset(installation_ids)
        self._check_jwt_expiry = check_jwt_expiry

    @_synchronized
    def caller_for_token(self, token: str) -> Caller | None:
        """The caller a PAT or an unexpired installation token stands for; None if neither."""
        if token in self._personal_tokens:
            return self._personal_tokens[token]
        issued = self._tokens.get(token)
        if issued is None or issued.kind != "installation" or self._expired(issued):
            return None
        return Caller("installation", str(issued.installation_id))

    @_synchronized
    def caller_for_app_jwt(self, token: str) -> Caller:
        """Check an app JWT as GitHub does; raises AuthenticationError with GitHub's message."""
        undecodable = AuthenticationError("A JSON web token could not be decoded")
        try:
            header = jwt.get_unverified_header(token)
            if self._app_public_key is None:
                claims = jwt.decode(token, options={"verify_signature": False})
            else:
                # Time claims are checked below against the virtual clock, not by PyJWT.
                claims = jwt.decode(
                    token,
                    self._app_public_key,
                    algorithms=["RS256"],
                    options={"verify_exp": False, "verify_iat": False, "verify_nbf": False},
                )
        except jwt.PyJWTError as exc:
            raise undecodable from exc
        if header.get("alg") != "RS256" or "iss" not in claims:
            raise undecodable
        iat, exp, issuer = claims.get("iat"), claims.get("exp"), str(claims["iss"])
        if not isinstance(iat, int) or isinstance(iat, bool):
            raise AuthenticationError(
                "'Issued at' claim ('iat') must be an Integer representing the time that the "
                "assertion was issued"
            )
        if not isinstance(exp, int) or isinstance(exp, bool) or exp <= iat:
            raise AuthenticationError(
                "'Expiration time' claim ('exp') must be a numeric value representing the future "
                "time at which the assertion expires"
            )
        if exp - iat > MAX_JWT_LIFETIME_SECONDS:
            raise AuthenticationError("'Expiration time' claim ('exp') is too far in the future")
        if self._check_jwt_expiry:
            now = self.clock.now().timestamp()
            if exp <= now:
                raise AuthenticationError(
                    "'Expiration time' claim ('exp') must be a numeric value representing the "
                    "future time at which the assertion expires"
                )
            if iat > now + JWT_CLOCK_SKEW_SECONDS:
                raise AuthenticationError(
                    "'Issued at' claim ('iat') must be an Integer representing the time that the "
                    "assertion was issued"
                )
        if self._app_id is not None and issuer != self._app_id:
            raise AuthenticationError("Integration not found")
        return Caller("app", issuer)

    # Tokens

    @_synchronized
    def create_registration_token(self, scope: Scope, *, value: str | None = None) -> IssuedToken:
        """A registration token for `scope`: random text as GitHub's, or `value` (tests that
        look for the tokens they were given in what the controller writes)."""
        return self._issue("registration", scope=scope, value=value)

    @_synchronized
    def create_remove_token(self, scope: Scope) -> IssuedToken:
        return self._issue("remove", scope=scope)

    @_synchronized
    def create_installation_token(self, installation_id: int) -> IssuedToken:
        if self._installation_ids is not None and installation_id not in self._installation_ids:
            raise NotFoundError(f"installation {installation_id}")
        return self._issue("installation", installation_id=installation_id)

    # Runner groups (organizations and enterprises; a repository has only the default group)

    @_synchronized
    def add_runner_group(
        self,
        scope: Scope,
        name: str,
        *,
        visibility: str = "all",
        selected_repositories: Sequence[str] = (),
        selected_organizations: Sequence[str] = (),
    ) -> RunnerGroup:
        """A group of an organization (`selected` visibility: for `selected_repositories`) or
        of an enterprise (`selected`: shared with `selected_organizations` only)."""
        if scope.repository:
            raise ValueError("repositories have no runner groups")
        groups = self._groups_of(scope)
        if any(g.name.casefold() == name.casefold() for g in groups):
            raise NameTakenError(f"runner group {name!r} already exists in {scope}")
        group = RunnerGroup(
            id=max(g.id for g in groups) + 1,
            name=name,
            visibility=visibility,
            selected_repositories=tuple(selected_repositories),
            selected_organizations=tuple(selected_organizations),
        )
        groups.append(group)
        return group

    @_synchronized
    def runner_groups(
        self, scope: Scope, *, visible_to_repository: str | None = None
    ) -> list[RunnerGroup]:
        groups = self._groups_of(scope)
        if visible_to_repository is None:
            return list(groups)
        return [g for g in groups if g.visible_to(visible_to_repository)]

    @_synchronized
    def inherited_runner_groups(self, organization: str) -> list[RunnerGroup]:
        """The groups of the organization's enterprise that are shared with it. Its
        repositories may all use them: the organization does not narrow them down here."""
        enterprise = self._enterprises.get(organization.casefold())
        if enterprise is None:
            return []
        groups = self._groups_of(Scope(enterprise=enterprise))
        return [g for g in groups if g.shared_with(organization)]

    # Runners

    @_synchronized
    def register_runner(
        self,
        scope: Scope,
        name: str,
        labels: Sequence[str],
        token: str,
        *,
        replace: bool = False,
        ephemeral: bool = False,
        runner_group_id: int = DEFAULT_RUNNER_GROUP_ID,
        os: str = "Linux",
    ) -> GitHubRunner:
        """What `config.sh --url ... --token T --name N --labels L [--replace]` does.

        The runner stays offline until it connects (`set_online`). With `replace`, an existing
        runner of that name keeps its id and takes the new settings, as config.sh --replace does.
        """
        self._check_token(token, "registration", scope)
        self._group(scope, runner_group_id)
        existing = self._find(scope, name)
        if existing is not None and not replace:
            raise NameTakenError(f'A runner exists with the same name "{name}"')
        record = RunnerRecord(
            id=existing.id if existing is not None else self._new_runner_id(),
            name=name,
            scope=scope,
            labels=self._labels([*IMPLICIT_LABELS, *labels]),
            runner_group_id=runner_group_id,
            ephemeral=ephemeral,
            os=os,
        )
        self._store(record)
        return record.to_port()

    @_synchronized
    def generate_jit_config(
        self,
        scope: Scope,
        name: str,
        labels: Sequence[str],
        runner_group_id: int,
        work_folder: str = "_work",
        *,
        scale_set_id: int | None = None,
    ) -> tuple[RunnerRecord, str]:
        """Register a just-in-time runner: the record exists from now on, offline, os unknown.
        With `scale_set_id`, a member of that runner scale set."""
        group = self._group(scope, runner_group_id)
        if self._find(scope, name) is not None:
            raise NameTakenError(f"Already exists - A runner with the name {name} already exists.")
        # GitHub keeps exactly the requested labels, typing the well-known ones read-only.
        record = RunnerRecord(
            id=self._new_runner_id(),
            name=name,
            scope=scope,
            labels=self._labels(labels),
            runner_group_id=group.id,
            ephemeral=True,
            os="unknown",
            scale_set_id=scale_set_id,
        )
        self._store(record)
        encoded = self._encode_jit_config(record, group, work_folder)
        self._jit_configs[encoded] = (scope, record.id)
        return record, encoded

    @_synchronized
    def register_jit(self, encoded_jit_config: str) -> GitHubRunner:
        """What `run.sh --jitconfig` does before connecting: take the runner the config names.

        A JIT config is single-use, and useless once its runner record has been deleted.
        """
        target = self._jit_configs.get(encoded_jit_config)
        if target is None:
            raise InvalidJitConfigError("unknown JIT config")
        if encoded_jit_config in self._used_jit_configs:
            raise InvalidJitConfigError("JIT config already used")
        scope, runner_id = target
        record = self._runners_of(scope).get(runner_id)
        if record is None:
            raise InvalidJitConfigError(f"runner {runner_id} of this JIT config was deleted")
        self._used_jit_configs.add(encoded_jit_config)
        return record.to_port()

    @_synchronized
    def set_online(
        self,
        scope: Scope,
        runner_id: int,
        online: bool = True,
        *,
        os: str | None = None,
        version: str = RUNNER_VERSION,
    ) -> GitHubRunner:
        """The runner connected or lost its connection.

        On connecting it reports its version and OS: `os`, else the one it registered with, else
        (a JIT runner, registered before it ran anywhere) Linux.
        """
        record = self.runner_record(scope, runner_id)
        if online:
            reported = os or (record.os if record.os != "unknown" else "Linux")
            record = replace(record, status="online", os=reported, version=version)
        else:
            record = replace(record, status="offline")
        self._store(record)
        if online:
            self._dispatch()
        return record.to_port()

    @_synchronized
    def set_busy(self, scope: Scope, runner_id: int, busy: bool) -> GitHubRunner:
        """Mark a runner busy or idle by hand, outside the job machinery (tests)."""
        record = self.runner_record(scope, runner_id)
        if busy and record.status != "online":
            raise FakeGitHubError(f"runner {record.name!r} is offline: it cannot take a job")
        record = replace(record, busy=busy)
        self._store(record)
        if not busy:
            self._dispatch()
        return record.to_port()

    @_synchronized
    def set_runner_status(
        self, scope: Scope, runner_id: int, *, status: str | None = None, busy: bool | None = None
    ) -> GitHubRunner:
        """Set what GitHub reports of a runner by hand, whatever led there (tests): busy while
        offline, say, as a runner that lost its connection in the middle of a job shows for a
        while. Jobs are not touched; an online idle runner may be handed a queued one."""
        if status not in (None, "online", "offline"):
            raise ValueError(f"a runner is online or offline, not {status!r}")
        record = self.runner_record(scope, runner_id)
        record = replace(
            record,
            status=record.status if status is None else status,
            busy=record.busy if busy is None else busy,
        )
        self._store(record)
        if record.status == "online" and not record.busy:
            self._dispatch()
        return record.to_port()

    @_synchronized
    def delete_runner(self, scope: Scope, runner_id: int) -> None:
        """The REST DELETE: refused while the runner runs a job. The runner process attached to
        the registration learns it lost it (`JobTaker.removed`)."""
        agent = self._remove(scope, runner_id)
        if agent is not None:
            self._later(agent.removed)

    @_synchronized
    def unregister_runner(
        self, scope: Scope, runner_id: int, *, remove_token: str | None = None
    ) -> None:
        """The runner removing itself: `config.sh remove --token T`, or an ephemeral runner's
        exit after its job (with its own credentials, so no token)."""
        if remove_token is not None:
            self._check_token(remove_token, "remove", scope)
        self._remove(scope, runner_id)

    @_synchronized
    def runner_record(self, scope: Scope, runner_id: int) -> RunnerRecord:
        record = self._runners_of(scope).get(runner_id)
        if record is None:
            raise NotFoundError(f"runner {runner_id} in {scope}")
        return record

    @_synchronized
    def runner_records(self, scope: Scope | None = None) -> list[RunnerRecord]:
        """Runners of a scope by id; of every scope when `scope` is None."""
        if scope is None:
            records = [r for runners in self._runners.values() for r in runners.values()]
        else:
            records = list(self._runners_of(scope).values())
        return sorted(records, key=attrgetter("id"))

    @property
    def next_runner_id(self) -> int:
        """The id the next runner registered anywhere gets."""
        with self.lock:
            return self._next_runner_id

    @_synchronized
    def skip_runner_ids(self, next_runner_id: int) -> None:
        """Give the next runner `next_runner_id` (tests that want ids of their own). Runner ids
        are unique across GitHub and never given out again, so they only move forward."""
        if next_runner_id < self._next_runner_id:
            raise ValueError(
                f"runner ids up to {self._next_runner_id - 1} are given out already; "
                f"the next cannot be {next_runner_id}"
            )
        self._next_runner_id = next_runner_id

    def runner(self, scope: Scope, runner_id: int) -> GitHubRunner:
        return self.runner_record(scope, runner_id).to_port()

    def runners(self, scope: Scope) -> list[GitHubRunner]:
        return [r.to_port() for r in self.runner_records(scope)]

    # Accounts

    @_synchronized
    def set_enterprise_of(self, organization: str, enterprise: str | None) -> None:
        """Make `organization` one of `enterprise`'s: its repositories' jobs may then run on the
        enterprise's runners (None detaches it)."""
        if enterprise is None:
            self._enterprises.pop(organization.casefold(), None)
        else:
            self._enterprises[organization.casefold()] = enterprise
            self._dispatch()

    @_synchronized
    def enterprise_of(self, organization: str) -> str | None:
        return self._enterprises.get(organization.casefold())

    @_synchronized
    def set_owner_type(self, owner: str, owner_type: OwnerType) -> None:
        """Owners are organizations unless made users here (webhooks then carry no
        `organization`)."""
        self._owner_types[owner.casefold()] = owner_type

    @_synchronized
    def owner_type(self, owner: str) -> OwnerType:
        return self._owner_types.get(owner.casefold(), "Organization")

    @_synchronized
    def account_id(self, kind: Literal["account", "repository", "enterprise"], name: str) -> int:
        """A stable id for a user or organization, a repository or an enterprise, given out in
        order of first use (so deterministic for a deterministic run)."""
        key = (kind, name.casefold())
        if key not in self._ids:
            self._id_counts[kind] += 1
            self._ids[key] = self._id_counts[kind]
        return self._ids[key]

    # Workflow jobs

    @_synchronized
    def submit_job(
        self,
        repository: str,
        labels: Sequence[str],
        duration_seconds: float,
        *,
        workflow_name: str = DEFAULT_WORKFLOW,
        job_name: str = DEFAULT_JOB_NAME,
        head_branch: str = DEFAULT_BRANCH,
        run_id: int | None = None,
    ) -> SimJob:
        """Queue a job of `repository` asking for `labels` (its `runs-on`).

        Each job gets a workflow run of its own unless `run_id` names one to join (created with
        that id if it does not exist). The job starts at once if a runner may take it.
        """
        job = self.job_book.submit(
            repository,
            labels,
            duration_seconds,
            self.clock.now(),
            name=job_name,
            workflow_name=workflow_name,
            head_branch=head_branch,
            run_id=run_id,
        )
        if self.scale_set_router is not None and self.scale_set_router.claim(job):
            self._routed[job.id] = None
        self._announce("queued", job)
        self._dispatch()
        return self.job_book.job(job.id)

    @_synchronized
    def assign_to_scale_set(self, job_id: int, scale_set_id: int) -> None:
        """The service assigned a claimed job to a scale set: its runners may take it now."""
        if job_id in self._routed:
            self._routed[job_id] = scale_set_id
            self._dispatch()

    @_synchronized
    def attach_agent(self, scope: Scope, runner_id: int, agent: JobTaker) -> None:
        """Connect the process running as this runner: it is told of the jobs it gets.

        A job the runner got before its agent was attached is handed over now.
        """
        self.runner_record(scope, runner_id)
        self._agents[runner_id] = agent
        job_id = self._running.get(runner_id)
        if job_id is not None:
            job = self.job_book.job(job_id)
            self._later(lambda: agent.assign(job))
        self._dispatch()

    @_synchronized
    def detach_agent(self, scope: Scope, runner_id: int) -> None:
        """Disconnect the runner's process; a no-op when the registration is already gone."""
        if runner_id in self._runners_of(scope):
            self._agents.pop(runner_id, None)

    @_synchronized
    def complete_job(self, job_id: int) -> SimJob:
        """The runner finished the job successfully. It is idle again, and may take the next
        job unless it is ephemeral (an ephemeral runner runs one job, then unregisters)."""
        job = self._in_progress(job_id)
        job = replace(job, status="completed", conclusion="success", completed_at=self.clock.now())
        self._finish(job, runner_online=True)
        self._dispatch()
        return job

    @_synchronized
    def interrupt_job(self, job_id: int) -> SimJob:
        """The runner process died in the middle of the job (SIGTERM while busy): the job fails,
        counted as interrupted, and the runner is offline from then on."""
        job = self._in_progress(job_id)
        job = replace(
            job,
            status="completed",
            conclusion="failure",
            completed_at=self.clock.now(),
            interrupted=True,
        )
        self._finish(job, runner_online=False)
        return job

    @_synchronized
    def job(self, job_id: int) -> SimJob:
        try:
            return self.job_book.job(job_id)
        except KeyError:
            raise NotFoundError(f"job {job_id}") from None

    @_synchronized
    def jobs(self) -> list[SimJob]:
        return self.job_book.jobs()

    @_synchronized
    def workflow_run(self, repository: str, run_id: int) -> WorkflowRun:
        """A run of `repository`; NotFoundError for a run of another repository too."""
        try:
            run = self.job_book.run(run_id)
        except KeyError:
            raise NotFoundError(f"run {run_id}") from None
        if run.repository.casefold() != repository.casefold():
            raise NotFoundError(f"run {run_id} in {repository}")
        return run

    @_synchronized
    def add_job_listener(self, listener: JobListener) -> None:
        """Call `listener` for each job queued, started and completed, in order."""
        self._job_listeners.append(listener)

    @_synchronized
    def job_summary(self) -> JobSummary:
        return self.job_book.summary(self.clock.now(), self._registered_peak, self._registered)

    # Rate limits

    @_synchronized
    def rate_budget(self, caller: Caller) -> RateBudget:
        """The caller's budget in the current window; a window lasts an hour from its first use."""
        now = self.clock.now()
        budget = self._budgets.get(caller)
        if budget is None or now >= budget.reset_at:
            limit = (
                UNAUTHENTICATED_LIMIT_PER_HOUR
                if caller.kind == "anonymous"
                else self.rate_limit_per_hour
            )
            budget = RateBudget(limit=limit, reset_at=now + RATE_LIMIT_WINDOW)
            self._budgets[caller] = budget
        return budget

    @_synchronized
    def charge(self, caller: Caller) -> RateBudget:
        budget = self.rate_budget(caller)
        budget = replace(budget, used=budget.used + 1)
        self._budgets[caller] = budget
        self._peak_budget_use = max(self._peak_budget_use, budget.used / budget.limit)
        return budget

    @_synchronized
    def peak_budget_use(self) -> float:
        """The largest share of its hour's budget any one caller had used in a window (0-1):
        how close the run came to the rate limit, whatever the window lengths."""
        return self._peak_budget_use

    @_synchronized
    def impose_secondary_rate_limit(self, seconds: float, *, status: int = 429) -> None:
        """Refuse every request for `seconds` of virtual time, with `retry-after` (403 or 429)."""
        self._secondary_until = self.clock.now() + timedelta(seconds=seconds)
        self._secondary_status = status

    @_synchronized
    def secondary_rate_limit(self) -> tuple[int, float] | None:
        """(status, seconds until lifted) while a secondary limit is in force."""
        if self._secondary_until is None:
            return None
        left = (self._secondary_until - self.clock.now()).total_seconds()
        if left <= 0:
            self._secondary_until = None
            return None
        return self._secondary_status, left

    # Fault injection and latency

    @_synchronized
    def fail_next(
        self,
        count: int = 1,
        *,
        status: int = 500,
        method: str | None = None,
        path: str | None = None,
    ) -> None:
        """Answer the next `count` matching requests with `status` (before any other check).

        `path` is an fnmatch pattern over the path without the /api/v3 prefix, such as
        `/orgs/*/actions/runners/*`.
        """
        if count < 1:
            raise ValueError("count must be at least 1")
        self._faults.append(_Fault(status, count, method, path))

    @_synchronized
    def configure_faults(self, knobs: FaultKnobs) -> None:
        """Set the run-wide faults: random 5xx at `error_rate`, and the recorded latency."""
        self._knobs = knobs
        self.latency_seconds = knobs.latency_seconds

    @_synchronized
    def take_fault(self, method: str, path: str) -> int | None:
        """The status to fail this request with: a fault from `fail_next`, else a random 5xx
        at the configured error rate, else None."""
        for fault in self._faults:
            if fault.matches(method, path):
                fault.remaining -= 1
                if fault.remaining <= 0:
                    self._faults.remove(fault)
                return fault.status
        knobs = self._knobs
        if knobs.error_rate > 0 and self._fault_random.random() < knobs.error_rate:
            return self._fault_random.choice(knobs.error_statuses)
        return None

    @_synchronized
    def set_latency(self, seconds: float) -> None:
        """Charge each request `seconds` of virtual time in the log.

        The fake never sleeps and never moves the clock: whoever drives the clock reads the
        latency from the log and decides what it costs.
        """
        self.latency_seconds = seconds

    # Request log

    @_synchronized
    def record_request(
        self, method: str, route: str | None, path: str, status: int, caller: Caller
    ) -> RequestRecord:
        record = RequestRecord(
            method=method,
            route=route,
            path=path,
            status=status,
            at=self.clock.now(),
            caller=caller.kind,
            latency_seconds=self.latency_seconds,
            caller_id=caller.id,
        )
        self.requests.append(record)
        return record

    @_synchronized
    def count_requests(
        self, method: str | None = None, route: str | None = None, status: int | None = None
    ) -> int:
        return sum(
            1
            for r in self.requests
            if (method is None or r.method == method)
            and (route is None or r.route == route)
            and (status is None or r.status == status)
        )

    @_synchronized
    def request_counts(self) -> Counter[str]:
        """Calls per endpoint, keyed like "GET /orgs/{org}/actions/runners"."""
        return Counter(f"{r.method} {r.route or r.path}" for r in self.requests)

    @property
    def total_latency_seconds(self) -> float:
        with self.lock:
            return sum(r.latency_seconds for r in self.requests)

    # Internals

    def _runners_of(self, scope: Scope) -> dict[int, RunnerRecord]:
        return self._runners.setdefault(_key(scope), {})

    def _find(self, scope: Scope, name: str) -> RunnerRecord | None:
        runner_id = self._ids_by_name.get(_key(scope), {}).get(name.casefold())
        return None if runner_id is None else self._runners_of(scope).get(runner_id)

    def _store(self, record: RunnerRecord) -> None:
        runners = self._runners_of(record.scope)
        if record.id not in runners:
            self._registered += 1
            self._registered_peak = max(self._registered_peak, self._registered)
        runners[record.id] = record
        self._ids_by_name.setdefault(_key(record.scope), {})[record.name.casefold()] = record.id
        self._note_availability(record)

    def _note_availability(self, record: RunnerRecord) -> None:
        if record.status == "online" and not record.busy and record.id not in self._spent:
            self._available[record.id] = record
        else:
            self._available.pop(record.id, None)

    def _remove(self, scope: Scope, runner_id: int) -> JobTaker | None:
        """Delete a runner's registration (refused while busy); returns its agent, detached."""
        record = self.runner_record(scope, runner_id)
        if record.busy:
            raise RunnerBusyError(record.name)
        del self._runners_of(scope)[runner_id]
        names = self._ids_by_name.get(_key(scope), {})
        if names.get(record.name.casefold()) == runner_id:
            del names[record.name.casefold()]
        self._registered -= 1
        self._spent.discard(runner_id)
        self._available.pop(runner_id, None)
        if record.scale_set_id is not None and self.scale_set_router is not None:
            self.scale_set_router.runner_removed(runner_id)
        return self._agents.pop(runner_id, None)

    def _later(self, callback: Callable[[], None]) -> None:
        self._outbox.append(callback)

    def _announce(self, action: JobAction, job: SimJob) -> None:
        event = JobEvent(action, job)
        for listener in self._job_listeners:
            self._later(functools.partial(listener, event))

    def _can_take(self, runner: RunnerRecord, job: SimJob) -> bool:
        if job.id in self._routed:  # GitHub assigned it to a scale set: any member takes it
            scale_set_id = self._routed[job.id]
            return scale_set_id is not None and runner.scale_set_id == scale_set_id
        if runner.scale_set_id is not None:
            return False
        if not covers(runner.scope, job.repository, self._enterprises.get):
            return False
        if not labels_match((label.name for label in runner.labels), job.labels):
            return False
        # An organization's runner group may be restricted to selected repositories, an
        # enterprise's to selected organizations.
        if runner.scope.organization:
            return self._group(runner.scope, runner.runner_group_id).visible_to(job.repository)
        if runner.scope.enterprise:
            return self._group(runner.scope, runner.runner_group_id).shared_with(job.owner)
        return True

    def _dispatch(self) -> None:
        """Hand queued jobs, oldest first, to online idle runners that may take them; among
        several, the runner with the lowest id (deterministic)."""
        if not self._available or not self.job_book.has_queued():
            return  # most calls: nothing to hand out, or nobody to take it
        idle = [self._available[runner_id] for runner_id in sorted(self._available)]
        starts: list[tuple[SimJob, RunnerRecord]] = []
        for job_id in self.job_book.queued_ids():  # started after: starting stores the job
            job = self.job_book.job(job_id)
            runner = next((r for r in idle if self._can_take(r, job)), None)
            if runner is None:
                continue
            idle.remove(runner)
            starts.append((job, runner))
            if not idle:
                break
        for job, runner in starts:
            self._start(job, runner)

    def _start(self, job: SimJob, runner: RunnerRecord) -> None:
        group = self._group(runner.scope, runner.runner_group_id)
        job = replace(
            job,
            status="in_progress",
            runner_id=runner.id,
            runner_name=runner.name,
            runner_group_id=group.id,
            runner_group_name=group.name,
            runner_scope=runner.scope,
            started_at=self.clock.now(),
        )
        self.job_book.store(job)
        if runner.ephemeral:
            self._spent.add(runner.id)
        self._store(replace(runner, busy=True))
        self._running[runner.id] = job.id
        self._announce("in_progress", job)
        if job.id in self._routed and self.scale_set_router is not None:
            self.scale_set_router.started(job, runner)
        agent = self._agents.get(runner.id)
        if agent is not None:
            self._later(functools.partial(agent.assign, job))

    def _in_progress(self, job_id: int) -> SimJob:
        job = self.job(job_id)
        if job.status != "in_progress":
            raise FakeGitHubError(f"job {job_id} is {job.status}, not in progress")
        return job

    def _finish(self, job: SimJob, *, runner_online: bool) -> None:
        self.job_book.store(job)
        self._announce("completed", job)
        if job.id in self._routed:
            del self._routed[job.id]
            if self.scale_set_router is not None:
                self.scale_set_router.finished(job)
        if job.runner_id is None or job.runner_scope is None:
            return
        self._running.pop(job.runner_id, None)
        record = self._runners_of(job.runner_scope).get(job.runner_id)
        if record is not None:
            status = record.status if runner_online else "offline"
            self._store(replace(record, busy=False, status=status))

    def _new_runner_id(self) -> int:
        # Runner ids are unique across GitHub, not per scope.
        runner_id = self._next_runner_id
        self._next_runner_id += 1
        return runner_id

    def _labels(self, names: Iterable[str]) -> tuple[RunnerLabel, ...]:
        labels: dict[str, RunnerLabel] = {}
        for name in names:
            folded = name.casefold()
            if folded in labels:
                continue
            label_id = self._label_ids.setdefault(folded, len(self._label_ids) + 1)
            kind: LabelType = "read-only" if folded in READ_ONLY_LABELS else "custom"
            labels[folded] = RunnerLabel(label_id, name, kind)
        return tuple(labels.values())

    def _groups_of(self, scope: Scope) -> list[RunnerGroup]:
        default = RunnerGroup(DEFAULT_RUNNER_GROUP_ID, "Default", default=True)
        if scope.repository:
            return [default]
        return self._groups.setdefault(_key(scope), [default])

    def _group(self, scope: Scope, group_id: int) -> RunnerGroup:
        for group in self._groups_of(scope):
            if group.id == group_id:
                return group
        raise NotFoundError(f"runner group {group_id} in {scope}")

    def _issue(
        self,
        kind: TokenKind,
        *,
        scope: Scope | None = None,
        installation_id: int | None = None,
        value: str | None = None,
    ) -> IssuedToken:
        if value is not None:
            if not value or value in self._tokens or value in self._personal_tokens:
                raise ValueError("a token's value must be new and not empty")
        elif kind == "installation":
            value = "ghs_" + self._random_text(string.ascii_letters + string.digits, 36)
        else:
            value = self._random_text(string.ascii_uppercase + string.digits, 29)
        token = IssuedToken(
            value=value,
            kind=kind,
            expires_at=self.clock.now() + self.token_ttl,
            scope=scope,
            installation_id=installation_id,
        )
        self._tokens[value] = token
        return token

    def _random_text(self, alphabet: str, length: int) -> str:
        return "".join(self._random.choices(alphabet, k=length))

    def _expired(self, token: IssuedToken) -> bool:
        return self.clock.now() >= token.expires_at

    def _check_token(self, value: str, kind: TokenKind, scope: Scope) -> None:
        token = self._tokens.get(value)
        if token is None or token.kind != kind:
            raise InvalidTokenError(f"not a {kind} token")
        if token.scope is None or _key(token.scope) != _key(scope):
            raise InvalidTokenError(f"the {kind} token is for {token.scope}, not {scope}")
        if self._expired(token):
            raise InvalidTokenError(f"the {kind} token expired at {token.expires_at.isoformat()}")

    def _encode_jit_config(self, record: RunnerRecord, group: RunnerGroup, work_folder: str) -> str:
        # Shaped like the runner's own: base64 JSON of the base64 config files it would write.
        client_id = self._random_text(string.ascii_lowercase + string.digits, 32)
        settings = {
            "AgentId": record.id,
            "AgentName": record.name,
            "PoolId": group.id,
            "PoolName": group.name,
            "ServerUrl": f"https://pipelines.actions.githubusercontent.com/{client_id}",
            "GitHubUrl": _github_url(record.scope),
            "WorkFolder": work_folder,
            "Ephemeral": True,
        }
        if record.scale_set_id is not None:
            settings["ScaleSetId"] = record.scale_set_id
        credentials = {"Scheme": "OAuth", "Data": {"clientId": client_id}}
        return _b64_json({".runner": _b64_json(settings), ".credentials": _b64_json(credentials)})
