"""The GitHubPort for real GitHub and GitHub Enterprise Server, built on PyGithub.

PyGithub's high-level API is used where it covers what we need (repository and organization
runner lists, organization registration token and JIT config). Its public `Github.requester` is
used for the rest: repository-scope registration token and JIT config, every enterprise endpoint,
runner groups, runner removal (where every status, header and message matters), and workflow
runs and jobs (PyGithub's objects fetch a run or job that lacks a field, one GET each, and its
page size is per client while ARC reads jobs 50 at a time).

PyGithub is configured for a server: no retries (urllib3's retry would sleep until a rate-limit
reset inside a hook), no throttling sleeps between requests (they serialize callers), a request
timeout, and 100 items per page. Rate limits are reported to the caller instead, who decides when
to come back.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

import requests
from github import Auth, Github, GithubException
from github.Requester import Requester

from hooks.clock import Clock, parse_time
from hooks.github.cached import CachedGitHub
from hooks.github.port import (
    ConflictError,
    GitHubError,
    GitHubPort,
    GitHubRunner,
    JitConfig,
    RateLimitedError,
    RegistrationToken,
    RemoveOutcome,
    RemoveResult,
    RunnerGroupInfo,
    Scope,
    WorkflowJob,
    WorkflowRun,
    pick_runner_group,
    repository_runner_group,
)
from hooks.metrics import GITHUB_API_CALLS, GITHUB_RATE_LIMIT, GITHUB_RATE_LIMIT_REMAINING
from hooks.settings import Settings

T = TypeVar("T")

log = logging.getLogger(__name__)

PER_PAGE = 100  # GitHub's maximum for every list used here
# GitHub documents this wait for a secondary rate limit that names no time to wait.
SECONDARY_RATE_LIMIT_WAIT = 60.0
# Refresh an installation token this long before it expires, so no request carries a token
# that expires in flight.
INSTALLATION_TOKEN_MARGIN = timedelta(minutes=5)
MAX_IDLE_CLIENTS = 64  # about the thread pool's size; more concurrent calls get a fresh client
MAX_PAGES = 1000  # a guard against a server whose Link header never ends
JOBS_PER_PAGE = 50  # ARC's page size for a run's jobs
BUSY_MESSAGE = "is still running a job"


def _version() -> str:
    try:
        return metadata.version("arc-hooks")
    except metadata.PackageNotFoundError:
        return "0.0.0"


USER_AGENT = f"arc-hooks/{_version()}"


# -- endpoint templates for metrics -----------------------------------------------------------

_SCOPE_TEMPLATES = ("/repos/{owner}/{repo}", "/orgs/{org}", "/enterprises/{enterprise}")
_SCOPE_SUFFIXES = (
    "/actions/runners",
    "/actions/runners/registration-token",
    "/actions/runners/generate-jitconfig",
    "/actions/runners/{runner_id}",
    "/actions/runner-groups",
    "",
)
_TEMPLATES = [scope + suffix for scope in _SCOPE_TEMPLATES for suffix in _SCOPE_SUFFIXES] + [
    "/repos/{owner}/{repo}/actions/runs",
    "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs",
    "/app/installations/{installation_id}/access_tokens",
    "/rate_limit",
]


def _template_regex(template: str) -> re.Pattern[str]:
    # Ids are numeric; other placeholders are one path segment. Literal segments such as
    # `registration-token` are listed before `{runner_id}`, and cannot match `\d+` anyway.
    pattern = re.escape(template)
    pattern = re.sub(r"\\\{[a-z_]*_id\\\}", r"\\d+", pattern)
    pattern = re.sub(r"\\\{[a-z_]+\\\}", r"[^/]+", pattern)
    return re.compile(f"^{pattern}$")


_TEMPLATE_PATTERNS = [(_template_regex(t), t) for t in _TEMPLATES]


def endpoint_template(verb: str, url: str, base_path: str = "") -> str:
    """`DELETE /orgs/{org}/actions/runners/{runner_id}` for a concrete request.

    Never returns a concrete name or id: unknown paths become `other`, so a metric label can
    neither leak data nor grow without bound.
    """
    path = urllib.parse.urlsplit(url).path
    if base_path and path.startswith(base_path + "/"):
        path = path[len(base_path) :]
    path = path.rstrip("/") or "/"
    for regex, template in _TEMPLATE_PATTERNS:
        if regex.match(path):
            return f"{verb} {template}"
    return f"{verb} other"


# -- answers: messages, rate limits, removal outcomes -----------------------------------------


def _header(headers: Mapping[str, Any] | None, name: str) -> str | None:
    if not headers:
        return None
    for key, value in headers.items():
        if key.lower() == name:
            return str(value)
    return None


def _message(data: Any) -> str:
    """GitHub's error message from a response body (parsed or raw)."""
    if isinstance(data, str):
        text = data
        try:
            data = json.loads(text) if text else None
        except ValueError:
            return text[:300]
    if isinstance(data, Mapping):
        return str(data.get("message") or "")
    return ""


def _is_rate_limit_message(message: str) -> bool:
    lowered = message.lower()
    return (
        Requester.isRateLimitError(lowered)
        or "secondary rate limit" in lowered
        or "rate limit exceeded" in lowered
    )


def is_rate_limited(status: int, headers: Mapping[str, Any] | None, message: str) -> bool:
    """A 403 or 429 with one of GitHub's rate-limit signals (any 429 is one)."""
    if status == 429:
        return True
    return status == 403 and (
        _to_float(_header(headers, "x-ratelimit-remaining")) == 0
        or _header(headers, "retry-after") is not None
        or _is_rate_limit_message(message)
    )


def rate_limit_wait(
    status: int, headers: Mapping[str, Any] | None, message: str, now: datetime
) -> float | None:
    """Seconds to wait when a 403/429 is a rate limit, else None.

    GitHub's rules: `x-ratelimit-remaining: 0` means wait until `x-ratelimit-reset`;
    `retry-after` means wait that long; a secondary-limit message with neither means wait at
    least a minute. When several apply, the longest wait wins.
    """
    if not is_rate_limited(status, headers, message):
        return None
    waits: list[float] = []
    remaining = _header(headers, "x-ratelimit-remaining")
    if remaining is not None and _to_float(remaining) == 0:
        reset = _to_float(_header(headers, "x-ratelimit-reset"))
        waits.append(reset - now.timestamp() if reset is not None else SECONDARY_RATE_LIMIT_WAIT)
    retry_after = _header(headers, "retry-after")
    if retry_after is not None:
        seconds = _to_float(retry_after)
        if seconds is None:
            try:  # the HTTP-date form
                seconds = (parsedate_to_datetime(retry_after) - now).total_seconds()
            except (TypeError, ValueError):
                seconds = SECONDARY_RATE_LIMIT_WAIT
        waits.append(seconds)
    if not waits:
        waits.append(SECONDARY_RATE_LIMIT_WAIT)
    # A reset already in the past (clock skew) still must not invite a hot retry loop.
    return max(max(waits), 1.0)


def _to_float(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None


def removal_outcome(status: int, headers: Mapping[str, Any] | None, message: str) -> RemoveOutcome:
    """Classify GitHub's answer to DELETE .../actions/runners/{id}."""
    if 200 <= status < 300:
        return RemoveOutcome.REMOVED
    if status == 404:
        return RemoveOutcome.NOT_FOUND
    if status == 422 and BUSY_MESSAGE in message:
        return RemoveOutcome.BUSY
    if is_rate_limited(status, headers, message):
        return RemoveOutcome.RATE_LIMITED
    if status == 403:
        return RemoveOutcome.FORBIDDEN
    return RemoveOutcome.ERROR


def _call_outcome(template: str, status: int, headers: Mapping[str, Any], body: str) -> str:
    if template.startswith("DELETE ") and template.endswith("/actions/runners/{runner_id}"):
        return removal_outcome(status, headers, _message(body)).value
    if is_rate_limited(status, headers, _message(body)):
        return "rate_limited"
    return f"{status // 100}xx"


# -- metrics and log hygiene ------------------------------------------------------------------


def instrument(requester: Requester) -> None:
    """Count every HTTP call this requester makes, and record the rate-limit headers.

    Every JSON call of PyGithub, from the high-level API, from pagination, from lazy completion
    or from `requestJsonAndCheck`, goes through `Requester.requestJson` and gets the status and
    the response headers back. Wrapping that public method on this one instance sees every call
    with no extra request and no process-wide state. (`Requester.injectConnectionClasses` would
    also see every call, but it is global to the process and turns off connection reuse.)
    """
    if getattr(requester, "_arc_hooks_instrumented", False):
        return
    original = requester.requestJson
    base_path = urllib.parse.urlsplit(requester.base_url).path.rstrip("/")

    def request_json(
        verb: str, url: str, *args: Any, **kwargs: Any
    ) -> tuple[int, dict[str, Any], str]:
        template = endpoint_template(verb, url, base_path)
        try:
            status, headers, body = original(verb, url, *args, **kwargs)
        except (requests.RequestException, OSError):
            GITHUB_API_CALLS.labels(template, "transport_error").inc()
            raise
        GITHUB_API_CALLS.labels(template, _call_outcome(template, status, headers, body)).inc()
        _record_rate_limit(headers)
        return status, headers, body

    setattr(requester, "requestJson", request_json)  # noqa: B010 - instance attribute on purpose
    setattr(requester, "_arc_hooks_instrumented", True)  # noqa: B010


def _record_rate_limit(headers: Mapping[str, Any]) -> None:
    resource = _header(headers, "x-ratelimit-resource") or "core"
    remaining = _to_float(_header(headers, "x-ratelimit-remaining"))
    limit = _to_float(_header(headers, "x-ratelimit-limit"))
    if remaining is not None:
        GITHUB_RATE_LIMIT_REMAINING.labels(resource).set(remaining)
    if limit is not None:
        GITHUB_RATE_LIMIT.labels(resource).set(limit)


class _RedactBodies(logging.Filter):
    """PyGithub's DEBUG log of each request carries the bodies, and the answers of the
    registration-token, JIT and installation-token endpoints are secrets. Headers are already
    masked by PyGithub's Auth classes."""

    _FORMAT = "%s %s://%s%s %s %s ==> %i %s %s"

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == self._FORMAT and isinstance(record.args, tuple) and len(record.args) == 9:
            args = list(record.args)
            args[5] = "<body redacted>"
            args[8] = "<body redacted>"
            record.args = tuple(args)
        return True


_REDACT_BODIES = _RedactBodies()


def _install_log_redaction() -> None:
    logger = logging.getLogger("github.Requester")
    if _REDACT_BODIES not in logger.filters:
        logger.addFilter(_REDACT_BODIES)


# -- GitHub App authentication on the injected clock ------------------------------------------


class ClockAppAuth(Auth.AppAuth):
    """`Auth.AppAuth` whose JWT times come from the injected clock (the simulated world runs on
    a virtual clock, and GitHub checks `iat`/`exp`)."""

    def __init__(self, app_id: int | str, private_key: str, clock: Clock) -> None:
        super().__init__(app_id, private_key)
        self._clock = clock

    def create_jwt(self, expiration: int | None = None) -> str:
        now = int(self._clock.now().timestamp())
        payload = {
            "iat": now + self._jwt_issued_at,
            "exp": now + (expiration if expiration is not None else self._jwt_expiry),
            "iss": self._app_id,
        }
        assert self._sign_func is not None
        signed = self._sign_func(payload)
        return signed.decode() if isinstance(signed, bytes) else signed

    def get_installation_auth(
        self,
        installation_id: int,
        token_permissions: dict[str, str] | None = None,
        requester: Requester | None = None,
    ) -> ClockInstallationAuth:
        return ClockInstallationAuth(
            self, installation_id, self._clock, token_permissions, requester
        )


class ClockInstallationAuth(Auth.AppInstallationAuth):
    """`Auth.AppInstallationAuth` that one adapter shares between its per-thread clients.

    Unlike the base class it is thread-safe (one token fetch at a time), judges expiry on the
    injected clock, counts the token request in the metrics, and turns a failed token request
    into a port error, so a 404 for the installation is never mistaken for a 404 of the
    runner endpoint that needed the token.
    """

    def __init__(
        self,
        app_auth: ClockAppAuth,
        installation_id: int,
        clock: Clock,
        token_permissions: dict[str, str] | None = None,
        requester: Requester | None = None,
    ) -> None:
        self._clock = clock
        self._lock = threading.RLock()
        self._cached: tuple[str, datetime] | None = None
        super().__init__(app_auth, installation_id, token_permissions, requester)

    def withRequester(self, requester: Requester) -> ClockInstallationAuth:
        with self._lock:
            super().withRequester(requester)
            instrument(self.requester)  # the JWT-authenticated requester for token requests
        return self

    @property
    def token(self) -> str:
        with self._lock:
            now = self._clock.now()
            if self._cached is None or self._cached[1] - INSTALLATION_TOKEN_MARGIN <= now:
                self._cached = self._fetch(now)
            return self._cached[0]

    def _fetch(self, now: datetime) -> tuple[str, datetime]:
        op = "create installation token"
        body = {"permissions": self.token_permissions} if self.token_permissions else None
        try:
            _, data = self.requester.requestJsonAndCheck(
                "POST", f"/app/installations/{int(self.installation_id)}/access_tokens", input=body
            )
            return str(data["token"]), parse_time(str(data["expires_at"]))
        except GithubException as exc:
            raise _port_error(op, exc.status, exc.headers, _message(exc.data), now) from None
        except (requests.RequestException, OSError) as exc:
            raise GitHubError(f"{op}: {_transport_message(exc)}") from None
        except _MALFORMED as exc:
            raise GitHubError(f"{op}: unexpected answer ({type(exc).__name__})") from None


def load_private_key(value: str) -> str:
    """GITHUB_APP_PRIVATE_KEY is a PEM, or a path to one (as ARC accepts)."""
    text = value.strip()
    if text.startswith("-----BEGIN"):
        # An env var may carry the newlines escaped.
        return text.replace("\\n", "\n") if "\n" not in text else text
    return Path(text).read_text()


def auth_from_settings(settings: Settings, clock: Clock) -> Auth.Auth:
    """A PAT when GITHUB_TOKEN is set (as ARC prefers it), else the GitHub App installation."""
    if settings.github_token is not None and settings.github_token.get_secret_value():
        return Auth.Token(settings.github_token.get_secret_value())
    if (
        settings.github_app_id
        and settings.github_app_installation_id is not None
        and settings.github_app_private_key is not None
    ):
        key = load_private_key(settings.github_app_private_key.get_secret_value())
        app = ClockAppAuth(settings.github_app_id, key, clock)
        return app.get_installation_auth(settings.github_app_installation_id)
    raise ValueError(
        "no GitHub credentials: set GITHUB_TOKEN, or GITHUB_APP_ID, GITHUB_APP_INSTALLATION_ID "
        "and GITHUB_APP_PRIVATE_KEY"
    )


# -- errors -----------------------------------------------------------------------------------


# What PyGithub or our parsing raise for an answer that is not what GitHub should send: a body
# that is not the documented JSON (KeyError, TypeError, ValueError, AttributeError), a Link or
# redirect to another host (AssertionError, RuntimeError).
_MALFORMED = (KeyError, TypeError, ValueError, AttributeError, AssertionError, RuntimeError)


def _transport_message(exc: BaseException) -> str:
    # requests' messages name host, port and path; credentials travel in headers, never there.
    return f"{type(exc).__name__}: {str(exc)[:300]}"


def _port_error(
    op: str, status: int, headers: Mapping[str, Any] | None, message: str, now: datetime
) -> GitHubError:
    text = f"{op}: HTTP {status}" + (f": {message}" if message else "")
    wait = rate_limit_wait(status, headers, message, now)
    if wait is not None:
        return RateLimitedError(text, retry_after=wait, status=status)
    if status == 409:
        return ConflictError(text, status)
    return GitHubError(text, status)


# -- the adapter ------------------------------------------------------------------------------


def _quote(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


def _scope_path(scope: Scope) -> str:
    if scope.repository:
        owner, _, repo = scope.repository.partition("/")
        return f"/repos/{_quote(owner)}/{_quote(repo)}"
    if scope.organization:
        return f"/orgs/{_quote(scope.organization)}"
    if scope.enterprise:
        return f"/enterprises/{_quote(scope.enterprise)}"
    raise GitHubError("a scope needs an enterprise, an organization or a repository")


def _runner(data: Mapping[str, Any]) -> GitHubRunner:
    labels = tuple(
        str(label.get("name", "")) if isinstance(label, Mapping) else str(label)
        for label in data.get("labels") or ()
    )
    ephemeral = data.get("ephemeral")
    group = data.get("runner_group_id")
    return GitHubRunner(
        id=int(data["id"]),
        name=str(data["name"]),
        status=str(data.get("status") or "offline"),
        busy=bool(data.get("busy", False)),
        labels=labels,
        ephemeral=bool(ephemeral) if ephemeral is not None else None,
        runner_group_id=int(group) if group is not None else None,
    )


def _registration_token(data: Mapping[str, Any]) -> RegistrationToken:
    return RegistrationToken(
        token=str(data["token"]), expires_at=parse_time(str(data["expires_at"]))
    )


def _workflow_run(data: Mapping[str, Any]) -> WorkflowRun:
    return WorkflowRun(id=int(data.get("id") or 0), status=str(data.get("status") or ""))


def _workflow_job(data: Mapping[str, Any]) -> WorkflowJob:
    return WorkflowJob(
        status=str(data.get("status") or ""),
        labels=tuple(str(label) for label in data.get("labels") or ()),
        id=int(data.get("id") or 0),
    )


def _runner_group(data: Mapping[str, Any]) -> RunnerGroupInfo:
    return RunnerGroupInfo(
        id=int(data["id"]),
        name=str(data["name"]),
        default=bool(data.get("default", False)),
        inherited=bool(data.get("inherited", False)),
    )


def _next_link(headers: Mapping[str, Any]) -> str | None:
    link = _header(headers, "link")
    if not link:
        return None
    for part in link.split(","):
        url, _, params = part.partition(";")
        if re.search(r'rel="?next"?', params):
            return url.strip().strip("<>")
    return None


class PyGithubAdapter(GitHubPort):
    """GitHubPort on PyGithub, for repository, organization and enterprise scopes.

    PyGithub's Requester is not safe to share between threads (a connection object keeps the
    pending request in attributes between `request` and `getresponse`), and hooks call the port
    from a thread pool. So each call takes a `Github` client from a small pool, used by one
    thread at a time; the clients share the Auth, hence one installation token.
    """

    def __init__(
        self,
        *,
        auth: Auth.Auth,
        clock: Clock,
        base_url: str = "https://api.github.com",
        timeout: float = 5.0,
        user_agent: str = USER_AGENT,
        secrets: Sequence[str] = (),
    ) -> None:
        self._auth = auth
        self._clock = clock
        self._base_url = base_url.rstrip("/")
        # PyGithub insists on an int; rounding up never cuts a request shorter than asked.
        self._timeout = max(1, math.ceil(timeout))
        self._user_agent = user_agent
        self._secrets = tuple(s for s in secrets if s)
        self._idle: list[Github] = []
        self._pool_lock = threading.Lock()
        self._closed = False
        _install_log_redaction()

    @classmethod
    def from_settings(cls, settings: Settings, clock: Clock) -> PyGithubAdapter:
        secrets = [
            secret.get_secret_value()
            for secret in (settings.github_token, settings.github_app_private_key)
            if secret is not None
        ]
        return cls(
            auth=auth_from_settings(settings, clock),
            clock=clock,
            base_url=settings.api_base_url,
            timeout=settings.github_request_timeout,
            secrets=secrets,
        )

    def close(self) -> None:
        """Close the idle connections; clients in use close when their call ends."""
        with self._pool_lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for client in idle:
            client.close()

    # -- the port ----------------------------------------------------------------------------

    def list_runners(
        self, scope: Scope, *, not_before: datetime | None = None
    ) -> Sequence[GitHubRunner]:
        def call(gh: Github) -> list[GitHubRunner]:
            if scope.repository:
                listing = gh.get_repo(scope.repository).get_self_hosted_runners()
            elif scope.organization:
                listing = gh.get_organization(scope.organization).get_self_hosted_runners()
            else:
                return [
                    _runner(item)
                    for item in self._get_all(
                        gh, f"{_scope_path(scope)}/actions/runners", "runners"
                    )
                ]
            # Runner objects are not completable, so reading raw_data makes no request.
            return [_runner(item.raw_data) for item in listing]

        return self._guard("list runners", scope, call)

    def registration_token(self, scope: Scope) -> RegistrationToken:
        def call(gh: Github) -> RegistrationToken:
            if scope.organization and not scope.repository:
                org = gh.get_organization(scope.organization)
                return _registration_token(
                    org.create_self_hosted_runner_registration_token().raw_data
                )
            _, data = gh.requester.requestJsonAndCheck(
                "POST", f"{_scope_path(scope)}/actions/runners/registration-token"
            )
            return _registration_token(data)

        return self._guard("create registration token", scope, call)

    def generate_jit_config(
        self,
        scope: Scope,
        name: str,
        labels: Sequence[str],
        runner_group_id: int,
        work_folder: str,
    ) -> JitConfig:
        def call(gh: Github) -> JitConfig:
            if scope.organization and not scope.repository:
                org = gh.get_organization(scope.organization)
                jit = org.create_self_hosted_runner_jitconfig(
                    name, runner_group_id, list(labels), work_folder=work_folder
                )
                data: Mapping[str, Any] = jit.raw_data
            else:
                body = {
                    "name": name,
                    "runner_group_id": runner_group_id,
                    "labels": list(labels),
                    "work_folder": work_folder,
                }
                _, data = gh.requester.requestJsonAndCheck(
                    "POST", f"{_scope_path(scope)}/actions/runners/generate-jitconfig", input=body
                )
            return JitConfig(
                runner=_runner(data["runner"]),
                encoded_jit_config=str(data["encoded_jit_config"]),
            )

        return self._guard(f"generate JIT config for {name!r}", scope, call)

    def runner_group_id(self, scope: Scope, group_name: str) -> int:
        if scope.repository:
            return repository_runner_group(scope, group_name)

        def call(gh: Github) -> int:
            groups = self._get_all(
                gh, f"{_scope_path(scope)}/actions/runner-groups", "runner_groups"
            )
            return pick_runner_group(groups, group_name)

        return self._guard(f"find runner group {group_name!r}", scope, call)

    def list_workflow_runs(self, repository: str, status: str) -> Sequence[WorkflowRun]:
        scope = Scope(repository=repository)

        def call(gh: Github) -> list[WorkflowRun]:
            # The first page only, as ARC reads it: the newest runs.
            _, data = gh.requester.requestJsonAndCheck(
                "GET",
                f"{_scope_path(scope)}/actions/runs",
                parameters={"status": status, "per_page": PER_PAGE},
            )
            return [_workflow_run(item) for item in data.get("workflow_runs") or []]

        return self._guard(f"list {status} workflow runs", scope, call)

    def list_workflow_jobs(self, repository: str, run_id: int) -> Sequence[WorkflowJob]:
        scope = Scope(repository=repository)

        def call(gh: Github) -> list[WorkflowJob]:
            path = f"{_scope_path(scope)}/actions/runs/{int(run_id)}/jobs"
            jobs = self._get_all(gh, path, "jobs", per_page=JOBS_PER_PAGE)
            return [_workflow_job(item) for item in jobs]

        return self._guard(f"list jobs of workflow run {int(run_id)}", scope, call)

    def visible_runner_groups(
        self, organization: str, repository_name: str
    ) -> Sequence[RunnerGroupInfo]:
        scope = Scope(organization=organization)

        def call(gh: Github) -> list[RunnerGroupInfo]:
            path = f"{_scope_path(scope)}/actions/runner-groups"
            query = {"visible_to_repository": repository_name}
            groups = self._get_all(gh, path, "runner_groups", query)
            return [_runner_group(item) for item in groups]

        return self._guard(f"list runner groups visible to {repository_name!r}", scope, call)

    def remove_runner(
        self, scope: Scope, runner_id: int, *, not_before: datetime | None = None
    ) -> RemoveResult:
        # Every scope goes through requestJson: it returns status, headers and message for any
        # answer, which is what the classification needs (PyGithub's repository method reduces
        # a 422 "still running a job" to False).
        op = f"remove runner {int(runner_id)}"
        try:
            with self._client() as gh:
                status, headers, body = gh.requester.requestJson(
                    "DELETE", f"{_scope_path(scope)}/actions/runners/{int(runner_id)}"
                )
        except GitHubError as exc:  # from the installation token request
            error = _in_context(f"{op} in {scope}", exc)
            if isinstance(error, RateLimitedError):
                return RemoveResult(RemoveOutcome.RATE_LIMITED, error.retry_after, str(error))
            return RemoveResult(RemoveOutcome.ERROR, message=str(error))
        except (requests.RequestException, OSError, *_MALFORMED) as exc:
            return RemoveResult(
                RemoveOutcome.ERROR,
                message=self._redact(f"{op} in {scope}: {_transport_message(exc)}"),
            )
        message = _message(body)
        outcome = removal_outcome(status, headers, message)
        retry_after = None
        if outcome is RemoveOutcome.RATE_LIMITED:
            retry_after = rate_limit_wait(status, headers, message, self._clock.now())
        text = f"{op} in {scope}: HTTP {status}" + (f": {message}" if message else "")
        log.debug("%s", self._redact(text))
        return RemoveResult(outcome, retry_after, self._redact(text))

    # -- internals ---------------------------------------------------------------------------

    @contextmanager
    def _client(self) -> Iterator[Github]:
        """A client for one call, used by no other thread meanwhile.

        A pool rather than one client per thread: the thread pool's workers come and go, and a
        client per thread would leak clients and their connections.
        """
        with self._pool_lock:
            client = self._idle.pop() if self._idle else None
        if client is None:
            client = self._new_client()
        try:
            yield client
        finally:
            with self._pool_lock:
                keep = not self._closed and len(self._idle) < MAX_IDLE_CLIENTS
                if keep:
                    self._idle.append(client)
            if not keep:
                client.close()

    def _new_client(self) -> Github:
        client = Github(
            auth=self._auth,
            base_url=self._base_url,
            timeout=self._timeout,
            user_agent=self._user_agent,
            per_page=PER_PAGE,
            retry=None,
            seconds_between_requests=None,
            seconds_between_writes=None,
            # No hidden GET when we only need an organization's or repository's URL.
            lazy=True,
        )
        instrument(client.requester)
        return client

    def _get_all(
        self,
        gh: Github,
        path: str,
        item: str,
        query: Mapping[str, str] | None = None,
        *,
        per_page: int = PER_PAGE,
    ) -> list[Mapping[str, Any]]:
        """Every item of a paginated list, following the Link header."""
        items: list[Mapping[str, Any]] = []
        url: str | None = path
        parameters: dict[str, Any] | None = {**(query or {}), "per_page": per_page}
        seen: set[str] = set()
        while url is not None and url not in seen and len(seen) < MAX_PAGES:
            seen.add(url)
            headers, data = gh.requester.requestJsonAndCheck("GET", url, parameters=parameters)
            items.extend(data.get(item) or [])
            url = self._relative(_next_link(headers))
            parameters = None  # the next link carries them
        return items

    def _relative(self, url: str | None) -> str | None:
        # Follow a next link on our own base URL, whatever host name the server put in it.
        if url is None:
            return None
        parts = urllib.parse.urlsplit(url)
        base_path = urllib.parse.urlsplit(self._base_url).path.rstrip("/")
        path = parts.path
        if base_path and path.startswith(base_path + "/"):
            path = path[len(base_path) :]
        return path + (f"?{parts.query}" if parts.query else "")

    def _guard(self, op: str, scope: Scope, call: Callable[[Github], T]) -> T:
        """Run a call and turn every failure into a port error with a clean message."""
        what = f"{op} in {scope}"
        try:
            with self._client() as gh:
                return call(gh)
        except GitHubError as exc:  # e.g. from the installation token: add what it was for
            raise _in_context(what, exc) from None
        except GithubException as exc:
            message = self._redact(_message(exc.data))
            raise _port_error(what, exc.status, exc.headers, message, self._clock.now()) from None
        except (requests.RequestException, OSError) as exc:
            raise GitHubError(self._redact(f"{what}: {_transport_message(exc)}")) from None
        except _MALFORMED as exc:
            raise GitHubError(self._redact(f"{what}: {_transport_message(exc)}")) from None

    def _redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text


def _in_context(what: str, exc: GitHubError) -> GitHubError:
    text = f"{what}: {exc}"
    if isinstance(exc, RateLimitedError):
        return RateLimitedError(text, retry_after=exc.retry_after, status=exc.status)
    return type(exc)(text, exc.status)


def github_from_settings(settings: Settings, clock: Clock) -> GitHubPort:
    """The port for the configured GitHub: the PyGithub adapter behind the caches."""
    return CachedGitHub(PyGithubAdapter.from_settings(settings, clock), settings, clock)
