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

import base64
import logging
import math
import threading
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

import orjson
import requests
from github import Auth, Github, GithubException
from github.Requester import Requester
from jwt.exceptions import PyJWTError

from hooks.clock import Clock, parse_time
from hooks.github.cached import CachedGitHub
from hooks.github.credentials import DEFAULT_CREDENTIALS, UNUSABLE_APP_KEY, ApiCredentials
from hooks.github.list_pacing import LatestRateBudget
from hooks.github.offline import refuse_if_offline
from hooks.github.port import (
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
from hooks.github.rest import (
    JOBS_PER_PAGE,
    MALFORMED_ANSWER,
    MAX_PAGES,
    PER_PAGE,
    call_outcome,
    endpoint_template,
    error_message,
    error_text,
    header,
    next_link,
    parse_registration_token,
    parse_runner,
    parse_runner_group,
    parse_workflow_job,
    parse_workflow_run,
    port_error,
    rate_limit_wait,
    removal_outcome,
    scope_path,
    to_float,
)
from hooks.github.shared_lists import RunnerListBoard
from hooks.metrics import (
    GITHUB_API_CALLS,
    GITHUB_RATE_LIMIT,
    GITHUB_RATE_LIMIT_REMAINING,
    GITHUB_RATE_LIMIT_RESET,
)
from hooks.settings import CREDENTIALS_HINT, WITHOUT_BASIC_AUTH, Settings

T = TypeVar("T")

log = logging.getLogger(__name__)

# Refresh an installation token this long before it expires, so no request carries a token
# that expires in flight.
INSTALLATION_TOKEN_MARGIN = timedelta(minutes=5)
MAX_IDLE_CLIENTS = 64  # about the thread pool's size; more concurrent calls get a fresh client


def _version() -> str:
    try:
        return metadata.version("arc-hooks")
    except metadata.PackageNotFoundError:
        return "0.0.0"


USER_AGENT = f"arc-hooks/{_version()}"


# -- metrics and log hygiene ------------------------------------------------------------------


def instrument(
    requester: Requester,
    credentials: str = DEFAULT_CREDENTIALS,
    budget: LatestRateBudget | None = None,
) -> None:
    """Count every HTTP call this requester makes, and record the rate-limit headers (in the
    metrics, and in `budget` when given).

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
            GITHUB_API_CALLS.labels(template, "transport_error", credentials).inc()
            raise
        outcome = call_outcome(template, status, headers, body)
        GITHUB_API_CALLS.labels(template, outcome, credentials).inc()
        record_rate_limit(headers, credentials, budget)
        return status, headers, body

    setattr(requester, "requestJson", request_json)  # noqa: B010 - instance attribute on purpose
    setattr(requester, "_arc_hooks_instrumented", True)  # noqa: B010


def record_rate_limit(
    headers: Mapping[str, Any],
    credentials: str = DEFAULT_CREDENTIALS,
    budget: LatestRateBudget | None = None,
) -> None:
    """The rate-limit headers of an answer, in the metrics and in `budget` when given."""
    if budget is not None:
        budget.record(headers)
    resource = header(headers, "x-ratelimit-resource") or "core"
    remaining = to_float(header(headers, "x-ratelimit-remaining"))
    limit = to_float(header(headers, "x-ratelimit-limit"))
    reset = to_float(header(headers, "x-ratelimit-reset"))
    if remaining is not None:
        GITHUB_RATE_LIMIT_REMAINING.labels(resource, credentials).set(remaining)
    if limit is not None:
        GITHUB_RATE_LIMIT.labels(resource, credentials).set(limit)
    if reset is not None:
        GITHUB_RATE_LIMIT_RESET.labels(resource, credentials).set(reset)


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
        self.credentials = DEFAULT_CREDENTIALS  # the metrics label, set by the adapter
        super().__init__(app_auth, installation_id, token_permissions, requester)

    def withRequester(self, requester: Requester) -> ClockInstallationAuth:
        with self._lock:
            super().withRequester(requester)
            # The JWT-authenticated requester for token requests.
            instrument(self.requester, self.credentials)
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
        except PyJWTError:  # the App's key cannot sign: its own message may quote the key
            raise GitHubError(f"{op}: the GitHub App private key {UNUSABLE_APP_KEY}") from None
        except GithubException as exc:
            raise port_error(op, exc.status, exc.headers, error_message(exc.data), now) from None
        except (requests.RequestException, OSError) as exc:
            raise GitHubError(f"{op}: {_transport_message(exc)}") from None
        except MALFORMED_ANSWER as exc:
            raise GitHubError(f"{op}: unexpected answer ({type(exc).__name__})") from None


UNREADABLE_APP_KEY = (
    "GITHUB_APP_PRIVATE_KEY is neither a PEM (-----BEGIN ...) nor the path of a readable file "
    "(its value is not shown)"
)


def load_private_key(value: str) -> str:
    """GITHUB_APP_PRIVATE_KEY is a PEM, or a path to one (as ARC accepts). A PEM base64-encoded
    once more (`--from-literal=...=$(base64 -w0 app.pem)`, a Helm value written into `data:`)
    or wrapped in quotes is read too. Anything else is refused without quoting it: an error
    that names the value as a file would print the key."""
    text = value.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    pem = _pem_text(text) or _pem_text(_base64_text(text))
    if pem is not None:
        return pem
    if "\n" in text or len(text) > 4096:
        raise ValueError(UNREADABLE_APP_KEY)
    try:
        return Path(text).read_text()
    except (OSError, UnicodeDecodeError, ValueError):
        raise ValueError(UNREADABLE_APP_KEY) from None


def _pem_text(text: str) -> str | None:
    if not text.startswith("-----BEGIN"):
        return None
    # An env var may carry the newlines escaped.
    return text.replace("\\n", "\n") if "\n" not in text else text


def _base64_text(text: str) -> str:
    try:
        return base64.b64decode("".join(text.split()), validate=True).decode().strip()
    except (ValueError, UnicodeDecodeError):
        return ""


def scale_set_auth_from_settings(settings: Settings, clock: Clock) -> Auth.Auth:
    """The server's token or App, never its basic auth: runner scale sets take a bearer
    token, and sending the basic pair as one would hand the proxy's credentials to GitHub."""
    return auth_from_settings(settings.model_copy(update=WITHOUT_BASIC_AUTH), clock)


def auth_from_settings(settings: Settings, clock: Clock) -> Auth.Auth:
    """In ARC's order: basic auth when both its settings are given (for a proxy in front of
    GitHub's API), a PAT when GITHUB_TOKEN is set, else the GitHub App installation."""
    if settings.basic_auth is not None:
        return Auth.Login(*settings.basic_auth)
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
    raise ValueError(f"no GitHub credentials: {CREDENTIALS_HINT}")


# -- errors -----------------------------------------------------------------------------------


def _transport_message(exc: BaseException) -> str:
    """The same text for every failure of one kind: requests' own messages carry object
    addresses (`<HTTPSConnection object at 0x7f...>`) that differ at every call, and the text
    reaches status conditions (`rest.error_text`). They are logged at debug level."""
    log.debug("GitHub transport failure: %s: %s", type(exc).__name__, str(exc)[:300])
    return f"no answer from GitHub ({type(exc).__name__})"


# -- the adapter ------------------------------------------------------------------------------


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
        credentials: str = DEFAULT_CREDENTIALS,
    ) -> None:
        self._auth = auth
        self._credentials = credentials
        if isinstance(auth, ClockInstallationAuth):
            auth.credentials = credentials
        self._clock = clock
        self._base_url = base_url.rstrip("/")
        # PyGithub insists on an int; rounding up never cuts a request shorter than asked.
        self._timeout = max(1, math.ceil(timeout))
        self._user_agent = user_agent
        self._secrets = tuple(s for s in secrets if s)
        self._idle: list[Github] = []
        # The token's API budget as GitHub's latest answer told it (`hooks.github.list_pacing`).
        self.rate_budget = LatestRateBudget()
        self._pool_lock = threading.Lock()
        self._closed = False
        _install_log_redaction()

    @classmethod
    def from_settings(
        cls, settings: Settings, clock: Clock, *, credentials: str = DEFAULT_CREDENTIALS
    ) -> PyGithubAdapter:
        return cls(
            auth=auth_from_settings(settings, clock),
            clock=clock,
            base_url=settings.api_base_url,
            timeout=settings.github_request_timeout,
            secrets=settings.github_secrets,
            credentials=credentials,
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
                    parse_runner(item)
                    for item in self._get_all(gh, f"{scope_path(scope)}/actions/runners", "runners")
                ]
            # Runner objects are not completable, so reading raw_data makes no request.
            return [parse_runner(item.raw_data) for item in listing]

        return self._guard("list runners", scope, call)

    def runners_named(
        self, scope: Scope, name: str, *, not_before: datetime | None = None
    ) -> Sequence[GitHubRunner]:
        def call(gh: Github) -> list[GitHubRunner]:
            path = f"{scope_path(scope)}/actions/runners"
            items = self._get_all(gh, path, "runners", {"name": name})
            # A server that ignores the filter (an older GHES) lists every runner.
            return [runner for runner in map(parse_runner, items) if runner.name == name]

        return self._guard(f"find runner {name!r}", scope, call)

    def registration_token(self, scope: Scope) -> RegistrationToken:
        def call(gh: Github) -> RegistrationToken:
            path = f"{scope_path(scope)}/actions/runners/registration-token"
            return parse_registration_token(_created(gh.requester, path))

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
                    "POST", f"{scope_path(scope)}/actions/runners/generate-jitconfig", input=body
                )
            return JitConfig(
                runner=parse_runner(data["runner"]),
                encoded_jit_config=str(data["encoded_jit_config"]),
            )

        return self._guard(f"generate JIT config for {name!r}", scope, call)

    def runner_group_id(self, scope: Scope, group_name: str) -> int:
        if scope.repository:
            return repository_runner_group(scope, group_name)

        def call(gh: Github) -> int:
            groups = self._get_all(
                gh, f"{scope_path(scope)}/actions/runner-groups", "runner_groups"
            )
            return pick_runner_group(groups, group_name)

        return self._guard(f"find runner group {group_name!r}", scope, call)

    def list_workflow_runs(self, repository: str, status: str) -> Sequence[WorkflowRun]:
        scope = Scope(repository=repository)

        def call(gh: Github) -> list[WorkflowRun]:
            # Every page, as ARC reads them (github.go, listRepositoryWorkflowRuns).
            path = f"{scope_path(scope)}/actions/runs"
            runs = self._get_all(gh, path, "workflow_runs", {"status": status})
            return [parse_workflow_run(item) for item in runs]

        return self._guard(f"list {status} workflow runs", scope, call)

    def list_workflow_jobs(self, repository: str, run_id: int) -> Sequence[WorkflowJob]:
        scope = Scope(repository=repository)

        def call(gh: Github) -> list[WorkflowJob]:
            path = f"{scope_path(scope)}/actions/runs/{int(run_id)}/jobs"
            jobs = self._get_all(gh, path, "jobs", per_page=JOBS_PER_PAGE)
            return [parse_workflow_job(item) for item in jobs]

        return self._guard(f"list jobs of workflow run {int(run_id)}", scope, call)

    def visible_runner_groups(
        self, organization: str, repository_name: str
    ) -> Sequence[RunnerGroupInfo]:
        scope = Scope(organization=organization)

        def call(gh: Github) -> list[RunnerGroupInfo]:
            path = f"{scope_path(scope)}/actions/runner-groups"
            query = {"visible_to_repository": repository_name}
            groups = self._get_all(gh, path, "runner_groups", query)
            return [parse_runner_group(item) for item in groups]

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
                    "DELETE", f"{scope_path(scope)}/actions/runners/{int(runner_id)}"
                )
        except GitHubError as exc:  # from the installation token request
            error = _in_context(f"{op} in {scope}", exc)
            if isinstance(error, RateLimitedError):
                return RemoveResult(RemoveOutcome.RATE_LIMITED, error.retry_after, str(error))
            return RemoveResult(RemoveOutcome.ERROR, message=str(error))
        except (requests.RequestException, OSError, *MALFORMED_ANSWER) as exc:
            return RemoveResult(
                RemoveOutcome.ERROR,
                message=self._redact(f"{op} in {scope}: {_transport_message(exc)}"),
            )
        except PyJWTError:
            message = f"{op} in {scope}: the GitHub App private key {UNUSABLE_APP_KEY}"
            return RemoveResult(RemoveOutcome.ERROR, message=message)
        message = error_message(body)
        outcome = removal_outcome(status, headers, message)
        retry_after = None
        if outcome is RemoveOutcome.RATE_LIMITED:
            retry_after = rate_limit_wait(status, headers, message, self._clock.now())
        text = error_text(f"{op} in {scope}", status, message)
        log.debug("%s", self._redact(text))
        return RemoveResult(outcome, retry_after, self._redact(text))

    # -- internals ---------------------------------------------------------------------------

    @contextmanager
    def _client(self) -> Iterator[Github]:
        """A client for one call, used by no other thread meanwhile.

        A pool rather than one client per thread: the thread pool's workers come and go, and a
        client per thread would leak clients and their connections.
        """
        refuse_if_offline("a GitHub request")
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
        instrument(client.requester, self._credentials, self.rate_budget)
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
            url = self._relative(next_link(headers))
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
        except PyJWTError:  # the App's key cannot sign: its own message may quote the key
            raise GitHubError(f"{what}: the GitHub App private key {UNUSABLE_APP_KEY}") from None
        except GithubException as exc:
            message = self._redact(error_message(exc.data))
            raise port_error(what, exc.status, exc.headers, message, self._clock.now()) from None
        except (requests.RequestException, OSError) as exc:
            raise GitHubError(self._redact(f"{what}: {_transport_message(exc)}")) from None
        except MALFORMED_ANSWER as exc:
            raise GitHubError(self._redact(f"{what}: {_transport_message(exc)}")) from None

    def _redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text


def _created(requester: Requester, path: str) -> Any:
    """The answer to a POST that GitHub answers `201 Created` when it creates what was asked:
    any other success is an error, as ARC's client has it (a proxy or a stand-in answering 200
    has not created a token). An error status raises what PyGithub raises for it."""
    status, headers, body = requester.requestJson("POST", path)
    data = orjson.loads(body) if body else None
    if status >= 400:
        raise requester.createException(status, headers, data if isinstance(data, dict) else {})
    if status != 201:
        raise GitHubError(f"unexpected status {status} (201 Created expected)", status)
    return data


def _in_context(what: str, exc: GitHubError) -> GitHubError:
    text = f"{what}: {exc}"
    if isinstance(exc, RateLimitedError):
        return RateLimitedError(text, retry_after=exc.retry_after, status=exc.status)
    return type(exc)(text, exc.status)


def github_from_settings(
    settings: Settings, clock: Clock, board: RunnerListBoard | None = None
) -> GitHubPort:
    """The port for the configured GitHub: the PyGithub adapter behind the caches (sharing the
    runner lists through `board`, when given)."""
    adapter = PyGithubAdapter.from_settings(settings, clock)
    return CachedGitHub(adapter, settings, clock, board=board, rate_budget=adapter.rate_budget)


def github_for_credentials(
    settings: Settings, clock: Clock, credentials: ApiCredentials
) -> GitHubPort:
    """The port for a resource's credentials Secret: the server's settings with the Secret's
    credentials (and URLs, where it gives them), behind caches of its own."""
    own = settings.model_copy(update=credentials.settings_overrides())
    adapter = PyGithubAdapter.from_settings(own, clock, credentials=credentials.source)
    return CachedGitHub(adapter, own, clock, rate_budget=adapter.rate_budget)
