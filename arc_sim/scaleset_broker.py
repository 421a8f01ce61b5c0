"""A simulated Actions service for runner scale sets, and its GitHub side, on virtual time.

    github = FakeGitHub(clock); github.add_personal_access_token(pat)
    broker = ScaleSetBroker(github)
    with serve_loopback(build_app(broker)) as url:
        client = ScaleSetClient(f"{url}/acme", lambda: pat, clock=clock, sleep=...)

`build_app` serves the fake GitHub's REST API and the broker together: `POST
/actions/runner-registration` (also under /api/v3) exchanges a registration token the fake
GitHub issued (`RemoteAuth`) for the tenant's service URL and an admin JWT, and the service
answers under `/_services/actions/{tenant}/`. Modelled on `internal/testserver/server.go` of
GitHub's Go client `actions/scaleset` (MIT license), but stateful:

- scale sets per runner group (the fake GitHub's groups of the scope), unique names in a group;
- one message session per scale set: a second create answers 409 until the first is deleted
  or goes `session_timeout` seconds without a call;
- a message queue per scale set. A poll answers at once (time is virtual, a long poll never
  blocks): the first undeleted message after `lastMessageId`, else a new message of the job
  events since the last one plus offers of available jobs up to the poll's
  `X-ScaleSetMaxCapacity`, else 202. `drop_polls` makes polls answer 202 regardless, as a long
  poll that timed out;
- jobs: `submit_job` makes one available; a listener acquires it; the service assigns it
  (`assign_delay` later), a runner takes it (`take_job`) and finishes it (`complete_job`). A job
  no runner takes within `runner_timeout` is assigned again, at most 3 times, then fails;
- statistics computed from those jobs and the scale set's runners (JIT runners, ephemeral:
  removed when their job completes).

It shares the fake GitHub's jobs and runners (`ScaleSetRouter`): a JIT config registers a
runner of the fake GitHub, member of the scale set; a job queued on the fake GitHub whose
labels (beside `self-hosted`) a scale set's labels hold is claimed for it, and a member takes
it through the fake GitHub once it is assigned (such a job waits for a member however long).

The runner side (`connect_runner`, `take_job`, `complete_job`), `submit_job` and the fault
knobs (`fail_next`, `drop_polls`, `unavailable_for`) are Python methods for tests and the
simulated world; everything a listener or the hooks do goes over HTTP (or `in_process_transport`,
the same requests without a socket). Every public method and request is one atomic step of the
fake GitHub's.
"""

from __future__ import annotations

import base64
import contextlib
import fnmatch
import json
import random
import re
import string
import urllib.parse
import uuid
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from typing import Any, Literal

import httpx
import jwt
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from arc_sim.fake_github import FakeGitHub
from arc_sim.github_api import HTTP_METHODS, ApiResponse
from arc_sim.github_jobs import SimJob, covers, labels_match
from arc_sim.github_state import FakeGitHubError, NameTakenError, RunnerRecord
from hooks.clock import format_time, parse_optional_time
from hooks.github.port import Scope

GHES_PREFIX = "/api/v3"
REGISTRATION_PATH = "/actions/runner-registration"
SERVICE_PREFIX = "/_services/actions"
SCALE_SETS = "/_apis/runtime/runnerscalesets"
RUNNERS = "/_apis/distributedtask/pools/0/agents"
RUNNER_GROUPS = "/_apis/runtime/runnergroups"
QUEUES = "/_apis/runtime/messagequeues"
JSON_TYPE = "application/json; charset=utf-8"
MAX_CAPACITY_HEADER = "x-scalesetmaxcapacity"
MAX_REASSIGNMENTS = 3
MAX_JOBS_PER_MESSAGE = 100
ZERO_TIME = "0001-01-01T00:00:00Z"  # how the service writes a time not reached yet
NOT_ACQUIRED = "The job was not acquired by Runner of type self-hosted even after multiple attempts"
_REGISTRATION_TOKEN_PATH = re.compile(
    r"^(?:/api/v3)?/(?:orgs/(?P<org>[^/]+)|repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"
    r"|enterprises/(?P<enterprise>[^/]+))/actions/runners/registration-token$"
)

JobStatus = Literal["available", "acquired", "assigned", "running", "completed"]
Json = dict[str, Any]


class BrokerError(Exception):
    """A request the service refuses: a status and the .NET exception it names."""

    def __init__(self, status: int, exception: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.exception = exception
        self.message = message


@dataclass(frozen=True)
class Tenant:
    id: int
    scope: Scope


@dataclass
class BrokerRunner:
    id: int
    name: str
    scale_set_id: int
    work_folder: str
    jit_config: str = field(repr=False)
    connected: bool = False
    job: int | None = None  # the request id it runs
    tenant: int = 0


@dataclass
class BrokerJob:
    request_id: int
    scale_set_id: int
    repository: str  # "owner/name"
    workflow_ref: str
    display_name: str
    event_name: str
    labels: tuple[str, ...]
    workflow_run_id: int
    job_id: str
    queued_at: datetime
    status: JobStatus = "available"
    offered_to: set[uuid.UUID] = field(default_factory=set)  # sessions it was offered to
    acquired_at: datetime | None = None
    assigned_at: datetime | None = None
    runner_assigned_at: datetime | None = None
    finished_at: datetime | None = None
    runner_id: int = 0
    runner_name: str = ""
    result: str = ""
    assignments: int = 0
    workflow_job_id: int | None = None  # the fake GitHub's job, when it queued it


@dataclass
class BrokerSession:
    id: uuid.UUID
    owner: str
    token: str = field(repr=False)
    token_expires_at: datetime
    last_seen: datetime
    max_capacity: int | None = None  # of the last poll
    polls: int = 0


@dataclass
class BrokerMessage:
    id: int
    body: str
    statistics: Json


@dataclass
class BrokerScaleSet:
    id: int
    tenant: int
    name: str
    runner_group_id: int
    runner_group_name: str
    labels: list[tuple[str, str]]  # (type, name)
    disable_update: bool
    created_on: datetime
    session: BrokerSession | None = None
    messages: list[BrokerMessage] = field(default_factory=list)  # delivered, not deleted
    events: list[Json] = field(default_factory=list)  # job messages not yet in a message
    next_message_id: int = 1


@dataclass
class _Fault:
    status: int
    remaining: int
    method: str | None
    path: str | None  # fnmatch over the path under the tenant (e.g. "*/acquirejobs")
    retry_after: float | None


@dataclass(frozen=True)
class BrokerRequest:
    method: str
    route: str  # e.g. "POST /runnerscalesets/{id}/sessions"
    status: int
    max_capacity: str | None = None  # the header of a poll, as sent


@dataclass(frozen=True)
class _Call:
    method: str
    path: str  # under the tenant's service root
    query: Mapping[str, str]
    headers: Mapping[str, str]  # lower-case names
    body: bytes
    service_root: str  # "{base}/_services/actions/{tenant}"

    def json(self) -> Any:
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            raise BrokerError(400, "ArgumentException", "The request body is not JSON.") from None

    def bearer(self) -> str:
        scheme, _, token = self.headers.get("authorization", "").partition(" ")
        return token.strip() if scheme.lower() == "bearer" else ""


_Handler = Callable[[_Call, re.Match[str]], ApiResponse]


class ScaleSetBroker:
    """The Actions service's scale-set side for the fake GitHub `github`, on its clock."""

    def __init__(
        self,
        github: FakeGitHub,
        *,
        admin_token_ttl: float = 3600,
        queue_token_ttl: float = 3600,
        session_timeout: float = 300,
        assign_delay: float = 0,
        runner_timeout: float = 600,
        seed: int = 0,
    ) -> None:
        self.github = github
        self.clock = github.clock
        self.admin_token_ttl = timedelta(seconds=admin_token_ttl)
        self.queue_token_ttl = timedelta(seconds=queue_token_ttl)
        self.session_timeout = timedelta(seconds=session_timeout)
        self.assign_delay = timedelta(seconds=assign_delay)
        self.runner_timeout = timedelta(seconds=runner_timeout)
        # Every step runs as one of the fake GitHub's (`atomic`): jobs and runners are shared
        # with it (`ScaleSetRouter`), and its callbacks run once the step is over.
        github.scale_set_router = self
        self.requests: list[BrokerRequest] = []
        self._random = random.Random(seed)
        self._secret = self._text(32)
        self._tenants: dict[tuple[str, str], Tenant] = {}
        self._registration_tokens: dict[str, tuple[Scope, datetime]] = {}
        self._admin_tokens: dict[str, tuple[int, datetime]] = {}
        self._scale_sets: dict[int, BrokerScaleSet] = {}
        self._runners: dict[int, BrokerRunner] = {}
        self._jit_configs: dict[str, int] = {}
        self._jobs: dict[int, BrokerJob] = {}
        self._known_sessions: dict[uuid.UUID, int] = {}  # every session ever, by scale set
        self._faults: list[_Fault] = []
        self._drop_polls = 0
        self._unavailable_until: datetime | None = None
        self._by_workflow_job: dict[int, int] = {}  # the fake GitHub's job id -> request id
        self._next_id = {"scale_set": 1, "runner": 1, "job": 1, "run": 1000}
        self._routes = self._route_table()

    # -- the GitHub side: registration tokens --------------------------------------------------

    def observe_github_answer(self, method: str, path: str, status: int, body: bytes) -> None:
        """Remember a registration token the fake GitHub just issued over its REST API."""
        found = _REGISTRATION_TOKEN_PATH.match(path)
        if method.upper() != "POST" or status != HTTPStatus.CREATED or found is None:
            return
        try:
            data = json.loads(body)
        except ValueError:
            return
        parts = {k: urllib.parse.unquote(v) for k, v in found.groupdict().items() if v}
        if "org" in parts:
            scope = Scope(organization=parts["org"])
        elif "enterprise" in parts:
            scope = Scope(enterprise=parts["enterprise"])
        else:
            scope = Scope(repository=f"{parts['owner']}/{parts['repo']}")
        expires = parse_optional_time(data.get("expires_at")) or self.clock.now()
        self.remember_registration_token(data["token"], scope, expires)

    def remember_registration_token(self, token: str, scope: Scope, expires_at: datetime) -> None:
        """Accept `token` at runner-registration for `scope` until `expires_at` (a token a
        test issued in-process, with `FakeGitHub.create_registration_token`)."""
        with self.github.atomic():
            self._registration_tokens[token] = (scope, expires_at)

    # -- the runner side, jobs and faults (tests and the simulated world) -----------------------

    def submit_job(
        self,
        scale_set_id: int,
        *,
        repository: str = "acme/app",
        workflow_ref: str = "",
        display_name: str = "build",
        event_name: str = "push",
        labels: tuple[str, ...] | None = None,
    ) -> BrokerJob:
        """A job for the scale set (runs-on its labels): available from now on."""
        with self.github.atomic():
            self._settle()
            scale_set = self._scale_set(scale_set_id)
            job_labels = labels if labels is not None else tuple(n for _, n in scale_set.labels)
            return self._new_job(
                scale_set,
                repository,
                job_labels,
                display_name,
                workflow_ref=workflow_ref,
                event_name=event_name,
            )

    def _new_job(
        self,
        scale_set: BrokerScaleSet,
        repository: str,
        labels: tuple[str, ...],
        display_name: str,
        *,
        workflow_ref: str = "",
        event_name: str = "push",
    ) -> BrokerJob:
        job = BrokerJob(
            request_id=self._new_id("job"),
            scale_set_id=scale_set.id,
            repository=repository,
            workflow_ref=workflow_ref or f"{repository}/.github/workflows/ci.yaml@refs/heads/main",
            display_name=display_name,
            event_name=event_name,
            labels=labels,
            workflow_run_id=self._new_id("run"),
            job_id=str(uuid.UUID(int=self._random.getrandbits(128), version=4)),
            queued_at=self.clock.now(),
        )
        self._jobs[job.request_id] = job
        return job

    def connect_runner(self, encoded_jit_config: str) -> BrokerRunner:
        """A runner process started with its JIT config; a config works once."""
        with self.github.atomic():
            self._settle()
            runner_id = self._jit_configs.pop(encoded_jit_config, None)
            runner = self._runners.get(runner_id) if runner_id is not None else None
            if runner is None:
                raise ValueError("unknown, used or removed JIT config")
            # Taken on the fake GitHub too, but left offline there: this runner takes jobs
            # only when told to (`take_job`), not by the fake GitHub's dispatch.
            self.github.register_jit(encoded_jit_config)
            runner.connected = True
            return runner

    def take_job(self, runner_id: int) -> BrokerJob | None:
        """A connected, idle runner takes the oldest job assigned to its scale set."""
        with self.github.atomic():
            self._settle()
            runner = self._runners[runner_id]
            if not runner.connected or runner.job is not None:
                raise ValueError(f"runner {runner.name} is not connected and idle")
            waiting = [
                j
                for j in self._jobs.values()
                if j.scale_set_id == runner.scale_set_id and j.status == "assigned"
            ]
            if not waiting:
                return None
            job = min(waiting, key=lambda j: j.request_id)
            job.status = "running"
            job.runner_assigned_at = self.clock.now()
            job.runner_id, job.runner_name = runner.id, runner.name
            runner.job = job.request_id
            self._event(job, "JobStarted")
            return job

    def complete_job(self, request_id: int, result: str = "succeeded") -> BrokerJob:
        """The runner finished the job; as an ephemeral runner, it is removed."""
        with self.github.atomic():
            self._settle()
            job = self._jobs[request_id]
            if job.status != "running":
                raise ValueError(f"job {request_id} is {job.status}, not running")
            self._finish(job, result)
            runner = self._runners.get(job.runner_id)
            if runner is not None:
                self.github.delete_runner(self._tenant_scope(runner.tenant), runner.id)
            return job

    def fail_next(
        self,
        status: int,
        *,
        count: int = 1,
        method: str | None = None,
        path: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        """Answer the next `count` requests that match with `status` (before any check);
        `path` is an fnmatch pattern over the path under the tenant's service root, or
        `/actions/runner-registration`."""
        if count < 1:
            raise ValueError("count must be at least 1")
        with self.github.atomic():
            self._faults.append(_Fault(status, count, method, path, retry_after))

    def unavailable_for(self, seconds: float) -> None:
        """Every request answers 503 for `seconds` from now (an outage of the service)."""
        with self.github.atomic():
            self._unavailable_until = self.clock.now() + timedelta(seconds=seconds)

    def drop_polls(self, count: int = 1) -> None:
        """The next `count` polls end empty (202), as long polls the service let time out."""
        with self.github.atomic():
            self._drop_polls += count

    # -- the fake GitHub's jobs and runners (ScaleSetRouter, called under the shared lock) -------

    def claim(self, job: SimJob) -> bool:
        """A job queued on the fake GitHub whose `runs-on` a scale set's labels satisfy (in a
        scope that covers its repository) is that scale set's: available from now on."""
        for scale_set in sorted(self._scale_sets.values(), key=lambda s: s.id):
            scope = self._tenant_scope(scale_set.tenant)
            if not covers(scope, job.repository, self.github.enterprise_of):
                continue
            # A job names the scale set or its labels; `self-hosted` beside them is implied
            # (ARC's matching ignores it too), but alone it asks for any self-hosted runner.
            asked = [label for label in job.labels if label.casefold() != "self-hosted"]
            if not asked or not labels_match((name for _, name in scale_set.labels), asked):
                continue
            broker_job = self._new_job(scale_set, job.repository, job.labels, job.name)
            broker_job.workflow_job_id = job.id
            self._by_workflow_job[job.id] = broker_job.request_id
            broker_job.workflow_run_id = job.run_id
            return True
        return False

    def started(self, job: SimJob, runner: RunnerRecord) -> None:
        broker_job = self._job_of(job.id)
        member = self._runners.get(runner.id)
        if broker_job is None:
            return
        broker_job.status = "running"
        broker_job.runner_assigned_at = self.clock.now()
        broker_job.runner_id, broker_job.runner_name = runner.id, runner.name
        if member is not None:
            member.connected, member.job = True, broker_job.request_id
        self._event(broker_job, "JobStarted")

    def finished(self, job: SimJob) -> None:
        broker_job = self._job_of(job.id)
        if broker_job is not None and broker_job.status != "completed":
            self._finish(broker_job, "succeeded" if job.conclusion == "success" else "failed")

    def runner_removed(self, runner_id: int) -> None:
        runner = self._runners.pop(runner_id, None)
        if runner is not None:
            self._jit_configs.pop(runner.jit_config, None)

    def _job_of(self, workflow_job_id: int) -> BrokerJob | None:
        request_id = self._by_workflow_job.get(workflow_job_id)
        return self._jobs.get(request_id) if request_id is not None else None

    # -- reading the state ---------------------------------------------------------------------

    def settle(self) -> None:
        """Apply what virtual time has made due (assignments, timeouts, session expiry)."""
        with self.github.atomic():
            self._settle()

    def job(self, request_id: int) -> BrokerJob:
        with self.github.atomic():
            self._settle()
            return self._jobs[request_id]

    def scale_set(self, scale_set_id: int) -> BrokerScaleSet:
        with self.github.atomic():
            self._settle()
            return self._scale_set(scale_set_id)

    def scale_sets(self) -> list[BrokerScaleSet]:
        """Every scale set the service holds now."""
        with self.github.atomic():
            return list(self._scale_sets.values())

    def runner(self, runner_id: int) -> BrokerRunner | None:
        with self.github.atomic():
            return self._runners.get(runner_id)

    def statistics(self, scale_set_id: int) -> Json:
        with self.github.atomic():
            self._settle()
            return self._statistics(scale_set_id)

    def count_requests(self, route: str, status: int | None = None) -> int:
        with self.github.atomic():
            return sum(1 for r in self.requests if r.route == route and status in (None, r.status))

    # -- HTTP ----------------------------------------------------------------------------------

    @staticmethod
    def serves(path: str) -> bool:
        """Whether a request path is the broker's (else it is the fake GitHub's)."""
        return path in (REGISTRATION_PATH, GHES_PREFIX + REGISTRATION_PATH) or path.startswith(
            SERVICE_PREFIX + "/"
        )

    def handle(
        self,
        method: str,
        path: str,
        query: str,
        headers: Mapping[str, str],
        body: bytes,
        *,
        base_url: str,
    ) -> ApiResponse:
        method = method.upper()
        lowered = {k.lower(): v for k, v in headers.items()}
        with self.github.atomic():
            self._settle()
            if self._unavailable_until is not None and self.clock.now() < self._unavailable_until:
                self.requests.append(BrokerRequest(method, f"{method} (unavailable)", 503))
                return _json_response(503, {"message": "The service is unavailable."})
            if path in (REGISTRATION_PATH, GHES_PREFIX + REGISTRATION_PATH):
                response = self._take_fault(method, REGISTRATION_PATH) or (
                    self._runner_registration(method, lowered, body, base_url)
                )
                route = f"{method} {REGISTRATION_PATH}"
                self.requests.append(BrokerRequest(method, route, response.status))
                return response
            tenant_text, _, rest = path[len(SERVICE_PREFIX) + 1 :].partition("/")
            call = _Call(
                method=method,
                path="/" + rest,
                query=dict(urllib.parse.parse_qsl(query, keep_blank_values=True)),
                headers=lowered,
                body=body,
                service_root=f"{base_url}{SERVICE_PREFIX}/{tenant_text}",
            )
            route, response = self._serve(call, tenant_text)
            self._settle()
            capacity = lowered.get(MAX_CAPACITY_HEADER) if route.endswith("/messages") else None
            self.requests.append(BrokerRequest(method, route, response.status, capacity))
            return response

    def _serve(self, call: _Call, tenant_text: str) -> tuple[str, ApiResponse]:
        matched: tuple[str, _Handler, re.Match[str], str] | None = None
        for method, template, pattern, handler, auth in self._routes:
            found = pattern.match(call.path)
            if method == call.method and found:
                matched = (f"{method} {template}", handler, found, auth)
                break
        route = matched[0] if matched else f"{call.method} (unrouted)"
        fault = self._take_fault(call.method, call.path)
        if fault is not None:
            return route, fault
        try:
            tenant = self._tenant_by_id(tenant_text)
            if matched is None:
                raise BrokerError(404, "NotFoundException", "No such API.")
            _, handler, found, auth = matched
            if auth == "admin":
                self._check_admin(call, tenant)
                if "api-version" not in call.query:
                    raise BrokerError(400, "VssVersionNotSpecifiedException", "No api-version.")
            return route, handler(call, found)
        except BrokerError as exc:
            return route, _exception(exc)

    def _route_table(self) -> list[tuple[str, str, re.Pattern[str], _Handler, str]]:
        table: list[tuple[str, str, _Handler, str]] = [
            ("GET", RUNNER_GROUPS + "/?", self._get_runner_groups, "admin"),
            ("GET", SCALE_SETS, self._list_scale_sets, "admin"),
            ("POST", SCALE_SETS, self._create_scale_set, "admin"),
            ("GET", SCALE_SETS + "/{id}", self._get_scale_set, "admin"),
            ("PATCH", SCALE_SETS + "/{id}", self._update_scale_set, "admin"),
            ("DELETE", SCALE_SETS + "/{id}", self._delete_scale_set, "admin"),
            ("POST", SCALE_SETS + "/{id}/generatejitconfig", self._generate_jit, "admin"),
            ("POST", SCALE_SETS + "/{id}/sessions", self._create_session, "admin"),
            ("PATCH", SCALE_SETS + "/{id}/sessions/{sid}", self._refresh_session, "admin"),
            ("DELETE", SCALE_SETS + "/{id}/sessions/{sid}", self._delete_session, "admin"),
            ("POST", SCALE_SETS + "/{id}/acquirejobs", self._acquire_jobs, "queue"),
            ("GET", RUNNERS, self._list_runners, "admin"),
            ("GET", RUNNERS + "/{id}", self._get_runner, "admin"),
            ("DELETE", RUNNERS + "/{id}", self._remove_runner, "admin"),
            ("GET", QUEUES + "/{sid}/messages", self._get_message, "queue"),
            ("DELETE", QUEUES + "/{sid}/messages/{mid}", self._delete_message, "queue"),
        ]
        compiled = []
        for method, template, handler, auth in table:
            pattern = re.escape(template).replace(r"/\?", "/?")
            pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", pattern)
            compiled.append((method, template, re.compile(f"^{pattern}$"), handler, auth))
        return compiled

    # -- runner registration and authentication ----------------------------------------------

    def _runner_registration(
        self, method: str, headers: Mapping[str, str], body: bytes, base_url: str
    ) -> ApiResponse:
        if method != "POST":
            return _github_error(404, "Not Found")
        scheme, _, token = headers.get("authorization", "").partition(" ")
        grant = self._registration_tokens.get(token.strip())
        if scheme != "RemoteAuth" or grant is None:
            return _github_error(401, "Bad credentials")
        scope, expires_at = grant
        try:
            data = json.loads(body)
            wanted = _scope_of_config_url(str(data["url"]))
        except (ValueError, KeyError, TypeError):
            return _github_error(400, "Problems parsing JSON")
        if self.clock.now() >= expires_at or _scope_key(wanted) != _scope_key(scope):
            return _github_error(401, "Bad credentials")
        tenant = self._tenant(scope)
        now = self.clock.now()
        expires = now + self.admin_token_ttl
        claims = {
            "iss": "arc-sim-actions",
            "sub": f"tenant:{tenant.id}",
            "iat": int(now.timestamp()),
            "nbf": int(now.timestamp()),
            "exp": int(expires.timestamp()),
            "jti": self._text(16),
        }
        admin_token = jwt.encode(claims, self._secret, algorithm="HS256")
        self._admin_tokens[admin_token] = (tenant.id, expires)
        url = f"{base_url}{SERVICE_PREFIX}/{tenant.id}/"
        answer = {"url": url, "token": admin_token, "token_schema": "OAuthAccessToken"}
        return _json_response(201, answer)

    def _tenant(self, scope: Scope) -> Tenant:
        key = _scope_key(scope)
        if key not in self._tenants:
            self._tenants[key] = Tenant(len(self._tenants) + 1, scope)
        return self._tenants[key]

    def _tenant_scope(self, tenant_id: int) -> Scope:
        return next(t.scope for t in self._tenants.values() if t.id == tenant_id)

    def _tenant_by_id(self, text: str) -> Tenant:
        for tenant in self._tenants.values():
            if str(tenant.id) == text:
                return tenant
        raise BrokerError(404, "TenantNotFoundException", "No such tenant.")

    def _check_admin(self, call: _Call, tenant: Tenant) -> None:
        grant = self._admin_tokens.get(call.bearer())
        if grant is None or grant[0] != tenant.id or self.clock.now() >= grant[1]:
            raise BrokerError(401, "VssUnauthorizedException", "The token is not valid.")

    def _queue_session(self, call: _Call, scale_set: BrokerScaleSet) -> BrokerSession:
        session = scale_set.session
        token = call.bearer()
        if session is None or not token or token != session.token:
            raise BrokerError(401, "VssUnauthorizedException", "The token is not valid.")
        if self.clock.now() >= session.token_expires_at:
            raise BrokerError(401, "VssUnauthorizedException", "The token has expired.")
        session.last_seen = self.clock.now()
        return session

    # -- handlers: runner groups and scale sets -----------------------------------------------

    def _groups(self, call: _Call) -> list[tuple[int, str, bool]]:
        scope = self._tenant_by_id(call.service_root.rsplit("/", 1)[1]).scope
        return [(g.id, g.name, g.default) for g in self.github.runner_groups(scope)]

    def _get_runner_groups(self, call: _Call, _: re.Match[str]) -> ApiResponse:
        wanted = call.query.get("groupName")
        groups = [
            {
                "id": gid,
                "name": name,
                "size": sum(
                    1
                    for r in self._runners.values()
                    if self._scale_sets[r.scale_set_id].runner_group_id == gid
                ),
                "isDefaultGroup": default,
            }
            for gid, name, default in self._groups(call)
            if wanted is None or name.casefold() == wanted.casefold()
        ]
        return _json_response(200, {"count": len(groups), "value": groups})

    def _list_scale_sets(self, call: _Call, _: re.Match[str]) -> ApiResponse:
        tenant = self._tenant_of(call)
        group = call.query.get("runnerGroupId")
        name = call.query.get("name")
        found = [
            s
            for s in self._scale_sets.values()
            if s.tenant == tenant
            and (group is None or str(s.runner_group_id) == group)
            and (name is None or s.name == name)
        ]
        value = [self._scale_set_json(call, s) for s in found]
        return _json_response(200, {"count": len(value), "value": value})

    def _create_scale_set(self, call: _Call, _: re.Match[str]) -> ApiResponse:
        data = _object(call.json())
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise BrokerError(400, "ArgumentException", "A runner scale set needs a name.")
        group_id, group_name = self._group_of(call, data.get("runnerGroupId") or 0)
        self._check_name_free(call, name, group_id)
        labels = _labels(data.get("labels")) or [("System", name)]
        scale_set = BrokerScaleSet(
            id=self._new_id("scale_set"),
            tenant=self._tenant_of(call),
            name=name,
            runner_group_id=group_id,
            runner_group_name=group_name,
            labels=labels,
            disable_update=_disable_update(data),
            created_on=self.clock.now(),
        )
        self._scale_sets[scale_set.id] = scale_set
        return _json_response(200, self._scale_set_json(call, scale_set))

    def _get_scale_set(self, call: _Call, found: re.Match[str]) -> ApiResponse:
        return _json_response(200, self._scale_set_json(call, self._owned(call, found)))

    def _update_scale_set(self, call: _Call, found: re.Match[str]) -> ApiResponse:
        scale_set = self._owned(call, found)
        data = _object(call.json())
        group_id, group_name = scale_set.runner_group_id, scale_set.runner_group_name
        if data.get("runnerGroupId"):
            group_id, group_name = self._group_of(call, data["runnerGroupId"])
        name = data.get("name") or scale_set.name
        if not isinstance(name, str):
            raise BrokerError(400, "ArgumentException", "The name is not a string.")
        if (name, group_id) != (scale_set.name, scale_set.runner_group_id):
            self._check_name_free(call, name, group_id)
        labels = _labels(data.get("labels"))
        scale_set.name, scale_set.runner_group_id = name, group_id
        scale_set.runner_group_name = group_name
        scale_set.labels = labels or scale_set.labels
        if "RunnerSetting" in data:
            scale_set.disable_update = _disable_update(data)
        return _json_response(200, self._scale_set_json(call, scale_set))

    def _delete_scale_set(self, call: _Call, found: re.Match[str]) -> ApiResponse:
        scale_set = self._owned(call, found)
        del self._scale_sets[scale_set.id]
        for runner in [r for r in self._runners.values() if r.scale_set_id == scale_set.id]:
            self.runner_removed(runner.id)
            # Gone already, or busy: then it leaves when its job is over.
            with contextlib.suppress(FakeGitHubError):
                self.github.delete_runner(self._tenant_scope(runner.tenant), runner.id)
        for job in [j for j in self._jobs.values() if j.scale_set_id == scale_set.id]:
            del self._jobs[job.request_id]
        return ApiResponse(204)

    def _group_of(self, call: _Call, group_id: Any) -> tuple[int, str]:
        if not isinstance(group_id, int) or isinstance(group_id, bool):
            raise BrokerError(400, "ArgumentException", "runnerGroupId is not a number.")
        for gid, name, default in self._groups(call):
            if gid == group_id or (group_id == 0 and default):
                return gid, name
        raise BrokerError(404, "RunnerGroupNotFoundException", f"No runner group {group_id}.")

    def _check_name_free(self, call: _Call, name: str, group_id: int) -> None:
        tenant = self._tenant_of(call)
        for other in self._scale_sets.values():
            if (other.tenant, other.runner_group_id, other.name) == (tenant, group_id, name):
                raise BrokerError(
                    409,
                    "RunnerScaleSetExistsException",
                    f"A runner scale set named {name} exists in the runner group.",
                )

    # -- handlers: runners --------------------------------------------------------------------

    def _generate_jit(self, call: _Call, found: re.Match[str]) -> ApiResponse:
        scale_set = self._owned(call, found)
        data = _object(call.json())
        name, work_folder = data.get("name"), data.get("workFolder") or "_work"
        if not isinstance(name, str) or not name or not isinstance(work_folder, str):
            raise BrokerError(400, "ArgumentException", "A runner needs a name.")
        # A member is a runner of the fake GitHub too: listed, removable and given jobs there.
        try:
            record, encoded = self.github.generate_jit_config(
                self._tenant_scope(scale_set.tenant),
                name,
                [label for _, label in scale_set.labels],
                scale_set.runner_group_id,
                work_folder,
                scale_set_id=scale_set.id,
            )
        except NameTakenError:
            raise BrokerError(
                409, "AgentExistsException", f"A runner named {name} already exists."
            ) from None
        except FakeGitHubError as error:
            raise BrokerError(400, "ArgumentException", str(error)) from None
        runner = BrokerRunner(
            record.id, name, scale_set.id, work_folder, encoded, tenant=scale_set.tenant
        )
        self._runners[record.id] = runner
        self._jit_configs[encoded] = record.id
        return _json_response(200, {"runner": _runner_json(runner), "encodedJITConfig": encoded})

    def _list_runners(self, call: _Call, _: re.Match[str]) -> ApiResponse:
        name = call.query.get("agentName")
        found = [
            _runner_json(r)
            for r in self._runners.values()
            if self._scale_sets[r.scale_set_id].tenant == self._tenant_of(call)
            and (name is None or r.name == name)
        ]
        return _json_response(200, {"count": len(found), "value": found})

    def _get_runner(self, call: _Call, found: re.Match[str]) -> ApiResponse:
        return _json_response(200, _runner_json(self._owned_runner(call, found)))

    def _remove_runner(self, call: _Call, found: re.Match[str]) -> ApiResponse:
        runner = self._owned_runner(call, found)
        if runner.job is not None:
            raise BrokerError(
                400, "JobStillRunningException", f"The runner {runner.name} is running a job."
            )
        try:
            self.github.delete_runner(self._tenant_scope(runner.tenant), runner.id)
        except FakeGitHubError:  # busy on the fake GitHub: running a job it gave the runner
            raise BrokerError(
                400, "JobStillRunningException", f"The runner {runner.name} is running a job."
            ) from None
        self.runner_removed(runner.id)
        return ApiResponse(204)

    def _owned_runner(self, call: _Call, found: re.Match[str]) -> BrokerRunner:
        runner = self._runners.get(_int(found["id"]))
        if runner is None or self._scale_sets[runner.scale_set_id].tenant != self._tenant_of(call):
            raise BrokerError(404, "AgentNotFoundException", f"No runner {found['id']}.")
        return runner

    # -- handlers: sessions and the message queue ---------------------------------------------

    def _create_session(self, call: _Call, found: re.Match[str]) -> ApiResponse:
        scale_set = self._owned(call, found)
        owner = _object(call.json()).get("ownerName")
        if not isinstance(owner, str):
            raise BrokerError(400, "ArgumentException", "ownerName is not a string.")
        if scale_set.session is not None:
            raise BrokerError(
                409,
                "TaskAgentSessionConflictException",
                f"The scale set {scale_set.name} already has an active session for owner "
                f"{scale_set.session.owner}.",
            )
        now = self.clock.now()
        session = BrokerSession(
            id=uuid.UUID(int=self._random.getrandbits(128), version=4),
            owner=owner,
            token=self._text(40),
            token_expires_at=now + self.queue_token_ttl,
            last_seen=now,
        )
        scale_set.session = session
        self._known_sessions[session.id] = scale_set.id
        return _json_response(200, self._session_json(call, scale_set, session))

    def _refresh_session(self, call: _Call, found: re.Match[str]) -> ApiResponse:
        scale_set = self._owned(call, found)
        session = scale_set.session
        if session is None or str(session.id) != found["sid"]:
            raise BrokerError(404, "TaskAgentSessionExpiredException", "The session expired.")
        now = self.clock.now()
        session.token = self._text(40)
        session.token_expires_at = now + self.queue_token_ttl
        session.last_seen = now
        return _json_response(200, self._session_json(call, scale_set, session))

    def _delete_session(self, call: _Call, found: re.Match[str]) -> ApiResponse:
        scale_set = self._owned(call, found)
        session_id = _uuid(found["sid"])
        if self._known_sessions.get(session_id) != scale_set.id:
            raise BrokerError(404, "TaskAgentSessionNotFoundException", "No such session.")
        if scale_set.session is not None and scale_set.session.id == session_id:
            scale_set.session = None
        return ApiResponse(204)

    def _queue_scale_set(self, found: re.Match[str]) -> BrokerScaleSet:
        scale_set_id = self._known_sessions.get(_uuid(found["sid"]))
        scale_set = self._scale_sets.get(scale_set_id) if scale_set_id is not None else None
        if scale_set is None:
            raise BrokerError(401, "VssUnauthorizedException", "The token is not valid.")
        return scale_set

    def _get_message(self, call: _Call, found: re.Match[str]) -> ApiResponse:
        scale_set = self._queue_scale_set(found)
        session = self._queue_session(call, scale_set)
        if str(session.id) != found["sid"]:
            raise BrokerError(401, "VssUnauthorizedException", "The token is not valid.")
        capacity_text = call.headers.get(MAX_CAPACITY_HEADER)
        capacity = _int(capacity_text) if capacity_text is not None else -1
        if capacity < 0:
            raise BrokerError(
                400, "ArgumentException", "X-ScaleSetMaxCapacity must be a number from 0."
            )
        last_id = call.query.get("lastMessageId", "0")
        last_message_id = _int(last_id) if last_id else 0
        session.max_capacity = capacity
        session.polls += 1
        if self._drop_polls > 0:
            self._drop_polls -= 1
            return ApiResponse(202)
        message = self._next_message(call, scale_set, session, last_message_id, capacity)
        if message is None:
            return ApiResponse(202)
        payload = {
            "messageId": message.id,
            "messageType": "RunnerScaleSetJobMessages",
            "body": message.body,
            "statistics": message.statistics,
        }
        return _json_response(200, payload)

    def _next_message(
        self,
        call: _Call,
        scale_set: BrokerScaleSet,
        session: BrokerSession,
        last_message_id: int,
        capacity: int,
    ) -> BrokerMessage | None:
        for message in scale_set.messages:
            if message.id > last_message_id:
                return message
        batch = scale_set.events[:MAX_JOBS_PER_MESSAGE]
        del scale_set.events[: len(batch)]
        stats = self._statistics(scale_set.id)
        available = sorted(
            (j for j in self._jobs.values() if j.scale_set_id == scale_set.id),
            key=lambda j: j.request_id,
        )
        outstanding = sum(
            1 for j in available if j.status == "available" and session.id in j.offered_to
        )
        room = capacity - stats["totalAcquiredJobs"] - outstanding
        for job in available:
            if len(batch) >= MAX_JOBS_PER_MESSAGE or room <= 0:
                break
            if job.status == "available" and session.id not in job.offered_to:
                job.offered_to.add(session.id)
                acquire_url = f"{call.service_root}{SCALE_SETS}/{scale_set.id}/acquirejobs"
                batch.append(self._job_json(job, "JobAvailable", acquireJobUrl=acquire_url))
                room -= 1
        if not batch:
            return None
        message = BrokerMessage(scale_set.next_message_id, json.dumps(batch), stats)
        scale_set.next_message_id += 1
        scale_set.messages.append(message)
        return message

    def _delete_message(self, call: _Call, found: re.Match[str]) -> ApiResponse:
        scale_set = self._queue_scale_set(found)
        session = self._queue_session(call, scale_set)
        if str(session.id) != found["sid"]:
            raise BrokerError(401, "VssUnauthorizedException", "The token is not valid.")
        message_id = _int(found["mid"])
        if not 0 < message_id < scale_set.next_message_id:
            raise BrokerError(404, "MessageNotFoundException", f"No message {message_id}.")
        scale_set.messages = [m for m in scale_set.messages if m.id != message_id]
        return ApiResponse(204)

    def _acquire_jobs(self, call: _Call, found: re.Match[str]) -> ApiResponse:
        scale_set = self._owned(call, found)
        self._queue_session(call, scale_set)
        ids = call.json()
        if not isinstance(ids, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in ids
        ):
            raise BrokerError(400, "ArgumentException", "The body must be a list of job ids.")
        acquired: list[int] = []
        now = self.clock.now()
        for request_id in dict.fromkeys(ids):
            job = self._jobs.get(request_id)
            if job is None or job.scale_set_id != scale_set.id:
                continue
            if job.status == "available":
                job.status, job.acquired_at = "acquired", now
            if job.status in ("acquired", "assigned", "running"):
                acquired.append(request_id)
        return _json_response(200, {"count": len(acquired), "value": acquired})

    # -- time ----------------------------------------------------------------------------------

    def _settle(self) -> None:
        now = self.clock.now()
        for scale_set in self._scale_sets.values():
            session = scale_set.session
            if session is not None and now - session.last_seen >= self.session_timeout:
                scale_set.session = None
        for job in sorted(self._jobs.values(), key=lambda j: j.request_id):
            if job.status == "acquired" and job.acquired_at is not None:
                due = job.acquired_at + self.assign_delay
                if now >= due:
                    self._assign(job, due)
            # A job the fake GitHub queued waits there for a member, however long.
            while (
                job.status == "assigned"
                and job.assigned_at is not None
                and job.workflow_job_id is None
            ):
                due = job.assigned_at + self.runner_timeout
                if now < due:
                    break
                if job.assignments > MAX_REASSIGNMENTS:
                    self._finish(job, "failed", at=due)
                else:
                    self._assign(job, due)

    def _assign(self, job: BrokerJob, at: datetime) -> None:
        job.status, job.assigned_at = "assigned", at
        job.assignments += 1
        self._event(job, "JobAssigned")
        if job.workflow_job_id is not None:  # its runners may take it (may start it now)
            self.github.assign_to_scale_set(job.workflow_job_id, job.scale_set_id)

    def _finish(self, job: BrokerJob, result: str, *, at: datetime | None = None) -> None:
        runner = self._runners.get(job.runner_id)
        if runner is not None:
            runner.job = None
        job.status, job.result = "completed", result
        job.finished_at = at or self.clock.now()
        self._event(job, "JobCompleted")

    def _event(self, job: BrokerJob, kind: str) -> None:
        scale_set = self._scale_sets.get(job.scale_set_id)
        if scale_set is None:
            return
        extra: Json = {}
        if kind in ("JobStarted", "JobCompleted"):
            extra = {"runnerId": job.runner_id, "runnerName": job.runner_name}
        if kind == "JobCompleted":
            extra["result"] = job.result
        scale_set.events.append(self._job_json(job, kind, **extra))

    # -- rendering -----------------------------------------------------------------------------

    def _statistics(self, scale_set_id: int) -> Json:
        jobs = [j for j in self._jobs.values() if j.scale_set_id == scale_set_id]
        runners = [r for r in self._runners.values() if r.scale_set_id == scale_set_id]
        busy = sum(1 for r in runners if r.job is not None)

        def count(*statuses: JobStatus) -> int:
            return sum(1 for j in jobs if j.status in statuses)

        return {
            "totalAvailableJobs": count("available"),
            "totalAcquiredJobs": count("acquired", "assigned", "running"),
            "totalAssignedJobs": count("assigned", "running"),
            "totalRunningJobs": count("running"),
            "totalRegisteredRunners": len(runners),
            "totalBusyRunners": busy,
            "totalIdleRunners": len(runners) - busy,
        }

    def _scale_set_json(self, call: _Call, scale_set: BrokerScaleSet) -> Json:
        return {
            "id": scale_set.id,
            "name": scale_set.name,
            "runnerGroupId": scale_set.runner_group_id,
            "runnerGroupName": scale_set.runner_group_name,
            "labels": [{"type": t, "name": n} for t, n in scale_set.labels],
            "RunnerSetting": {"disableUpdate": scale_set.disable_update},
            "createdOn": format_time(scale_set.created_on),
            "runnerJitConfigUrl": (
                f"{call.service_root}{SCALE_SETS}/{scale_set.id}/generatejitconfig"
            ),
            "statistics": self._statistics(scale_set.id),
        }

    def _session_json(self, call: _Call, scale_set: BrokerScaleSet, session: BrokerSession) -> Json:
        return {
            "sessionId": str(session.id),
            "ownerName": session.owner,
            "runnerScaleSet": self._scale_set_json(call, scale_set),
            "messageQueueUrl": f"{call.service_root}{QUEUES}/{session.id}/messages",
            "messageQueueAccessToken": session.token,
            "statistics": self._statistics(scale_set.id),
        }

    @staticmethod
    def _job_json(job: BrokerJob, kind: str, **extra: Any) -> Json:
        owner, _, name = job.repository.partition("/")
        return {
            "messageType": kind,
            "runnerRequestId": job.request_id,
            "repositoryName": name,
            "ownerName": owner,
            "jobId": job.job_id,
            "jobWorkflowRef": job.workflow_ref,
            "jobDisplayName": job.display_name,
            "workflowRunId": job.workflow_run_id,
            "eventName": job.event_name,
            "requestLabels": list(job.labels),
            "queueTime": _time(job.queued_at),
            "scaleSetAssignTime": _time(job.assigned_at),
            "runnerAssignTime": _time(job.runner_assigned_at),
            "finishTime": _time(job.finished_at),
            **extra,
        }

    # -- helpers -------------------------------------------------------------------------------

    def _tenant_of(self, call: _Call) -> int:
        return int(call.service_root.rsplit("/", 1)[1])

    def _scale_set(self, scale_set_id: int) -> BrokerScaleSet:
        scale_set = self._scale_sets.get(scale_set_id)
        if scale_set is None:
            raise KeyError(f"no scale set {scale_set_id}")
        return scale_set

    def _owned(self, call: _Call, found: re.Match[str]) -> BrokerScaleSet:
        scale_set = self._scale_sets.get(_int(found["id"]))
        if scale_set is None or scale_set.tenant != self._tenant_of(call):
            raise BrokerError(
                404, "RunnerScaleSetNotFoundException", f"No runner scale set {found['id']}."
            )
        return scale_set

    def _take_fault(self, method: str, path: str) -> ApiResponse | None:
        for fault in self._faults:
            if fault.method is not None and fault.method.upper() != method:
                continue
            if fault.path is not None and not fnmatch.fnmatchcase(path, fault.path):
                continue
            fault.remaining -= 1
            if fault.remaining <= 0:
                self._faults.remove(fault)
            headers = {"content-type": "text/plain; charset=utf-8"}
            if fault.retry_after is not None:
                headers["retry-after"] = f"{fault.retry_after:g}"
            return ApiResponse(fault.status, headers, HTTPStatus(fault.status).phrase.encode())
        return None

    def _new_id(self, kind: str) -> int:
        value = self._next_id[kind]
        self._next_id[kind] = value + 1
        return value

    def _text(self, length: int) -> str:
        return "".join(self._random.choices(string.ascii_letters + string.digits, k=length))


def serve(
    broker: ScaleSetBroker,
    method: str,
    path: str,
    query: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    base_url: str,
    client_host: str = "127.0.0.1",
) -> ApiResponse:
    """One request to the fake GitHub's REST API or to the broker beside it."""
    if broker.serves(path):
        return broker.handle(method, path, query, headers, body, base_url=base_url)
    answer = broker.github.api.handle(
        method, path, query, headers, body, base_url=base_url, client_host=client_host
    )
    broker.observe_github_answer(method, path, answer.status, answer.body)
    return answer


def build_app(broker: ScaleSetBroker) -> Starlette:
    """The fake GitHub's REST API with the broker beside it, as one ASGI app."""

    async def endpoint(request: Request) -> Response:
        body = await request.body()
        url = request.url
        answer = serve(
            broker,
            request.method,
            url.path,
            url.query,
            request.headers,
            body,
            base_url=f"{url.scheme}://{url.netloc}",
            client_host=request.client.host if request.client else "127.0.0.1",
        )
        return Response(answer.body, answer.status, answer.headers)

    return Starlette(routes=[Route("/{path:path}", endpoint, methods=list(HTTP_METHODS))])


def in_process_transport(
    broker: ScaleSetBroker, guard: Callable[[], AbstractContextManager[Any]] | None = None
) -> httpx.MockTransport:
    """An httpx transport to `serve` without a socket (the simulated world's clients): the
    same requests and answers as over loopback. `guard` is held around each request."""

    def handle(request: httpx.Request) -> httpx.Response:
        url = request.url
        with guard() if guard is not None else contextlib.nullcontext():
            answer = serve(
                broker,
                request.method,
                url.path,
                url.query.decode(),
                request.headers,
                request.content,
                base_url=f"{url.scheme}://{url.netloc.decode()}",
            )
        return httpx.Response(answer.status, headers=answer.headers, content=answer.body)

    return httpx.MockTransport(handle)


# -- module helpers ----------------------------------------------------------------------------


def _scope_key(scope: Scope) -> tuple[str, str]:
    return scope.kind, str(scope).casefold()


def _scope_of_config_url(url: str) -> Scope:
    """The scope a configuration URL names (`/org`, `/owner/repo`, `/enterprises/name`)."""
    segments = [s for s in urllib.parse.urlsplit(url).path.split("/") if s]
    if len(segments) == 1:
        return Scope(organization=segments[0])
    if len(segments) == 2 and segments[0].lower() == "enterprises":
        return Scope(enterprise=segments[1])
    if len(segments) == 2:
        return Scope(repository="/".join(segments))
    raise ValueError("not a configuration URL")


def _time(when: datetime | None) -> str:
    return format_time(when.astimezone(UTC)) if when is not None else ZERO_TIME


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise BrokerError(400, "ArgumentException", "Not a number.") from None


def _uuid(text: str) -> uuid.UUID:
    try:
        return uuid.UUID(text)
    except ValueError:
        raise BrokerError(400, "ArgumentException", "Not a session id.") from None


def _object(data: Any) -> Json:
    if not isinstance(data, dict):
        raise BrokerError(400, "ArgumentException", "The body must be a JSON object.")
    return data


def _labels(data: Any) -> list[tuple[str, str]]:
    if data is None:
        return []
    if not isinstance(data, list) or not all(
        isinstance(lb, dict) and isinstance(lb.get("name"), str) and lb["name"] for lb in data
    ):
        raise BrokerError(400, "ArgumentException", "Labels must be objects with a name.")
    return [(str(lb.get("type") or "System"), lb["name"]) for lb in data]


def _disable_update(data: Json) -> bool:
    setting = data.get("RunnerSetting")
    return bool(setting.get("disableUpdate")) if isinstance(setting, dict) else False


def _runner_json(runner: BrokerRunner) -> Json:
    return {"id": runner.id, "name": runner.name, "runnerScaleSetId": runner.scale_set_id}


def _b64_json(value: object) -> str:
    return base64.b64encode(json.dumps(value).encode()).decode()


def _json_response(status: int, payload: object) -> ApiResponse:
    body = json.dumps(payload, separators=(",", ":")).encode()
    activity = str(uuid.uuid5(uuid.NAMESPACE_OID, body.decode()))
    return ApiResponse(status, {"content-type": JSON_TYPE, "activityid": activity}, body)


def _exception(error: BrokerError) -> ApiResponse:
    """An error as the service writes one: a .NET exception, serialized."""
    payload = {
        "$id": "1",
        "innerException": None,
        "message": error.message,
        "typeName": f"GitHub.DistributedTask.WebApi.{error.exception}, GitHub.DistributedTask",
        "typeKey": error.exception,
        "errorCode": 0,
        "eventId": 3000,
    }
    return _json_response(error.status, payload)


def _github_error(status: int, message: str) -> ApiResponse:
    payload = {"message": message, "documentation_url": "https://docs.github.com/rest"}
    body = json.dumps(payload).encode()
    return ApiResponse(status, {"content-type": JSON_TYPE}, body)
