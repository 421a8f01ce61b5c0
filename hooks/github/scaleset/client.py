"""A client of GitHub's runner scale-set protocol over httpx: what `client.go` and
`session_client.go` of GitHub's Go client `actions/scaleset` (MIT license) do, written afresh.

    client = ScaleSetClient("https://github.com/acme", lambda: pat, clock=SystemClock())
    scale_set = client.get_runner_scale_set(group.id, "arc") or client.create_runner_scale_set(
        RunnerScaleSetSpec(name="arc", runner_group_id=group.id))
    with client.create_message_session(scale_set.id, owner="listener-0") as session:
        message = session.get_message(last_message_id, max_capacity)

The client reaches the Actions service of the configuration URL's tenant with an admin
connection: a registration token from GitHub's REST API (with the PAT or installation token
`github_token()` gives), exchanged at `POST /actions/runner-registration` (`RemoteAuth`) for the
service URL and an admin JWT, renewed a minute before it expires. Every call is tried again as
the Go client's go-retryablehttp does (`rules.RetryPolicy`), waiting through the injected
`sleep`, so tests never wait. Tokens are kept out of every error message and repr.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any, Self, TypeVar
from uuid import UUID

import httpx
from pydantic import BaseModel

from hooks.clock import Clock
from hooks.github.scaleset.errors import (
    MessageQueueTokenExpiredError,
    ScaleSetConfigError,
    ScaleSetError,
    ScaleSetHTTPError,
    ScaleSetRateLimitedError,
    ScaleSetTransportError,
    SessionConflictError,
    error_for_answer,
)
from hooks.github.scaleset.models import (
    AcquiredJobs,
    AdminConnection,
    RegistrationToken,
    RunnerGroup,
    RunnerGroupList,
    RunnerReference,
    RunnerReferenceList,
    RunnerScaleSet,
    RunnerScaleSetJitRunnerConfig,
    RunnerScaleSetList,
    RunnerScaleSetMessage,
    RunnerScaleSetSession,
    RunnerScaleSetSpec,
    parse_answer,
    parse_message,
)
from hooks.github.scaleset.rules import (
    API_VERSION,
    GitHubConfig,
    RetryPolicy,
    SystemInfo,
    admin_token_stale,
    backoff,
    github_rate_limited,
    jwt_expiry,
    parse_config_url,
    registration_token_path,
    retry_wait,
    service_url,
    should_retry,
    url_path,
    with_path_suffix,
)

SCALE_SETS = "_apis/runtime/runnerscalesets"
RUNNERS = "_apis/distributedtask/pools/0/agents"
RUNNER_GROUPS = "_apis/runtime/runnergroups/"
RUNNER_REGISTRATION = "/actions/runner-registration"
MAX_CAPACITY_HEADER = "X-ScaleSetMaxCapacity"
MAX_CAPACITY = 2**31 - 1
DEFAULT_TIMEOUT_SECONDS = 300.0
"""A long poll may be held by the service for about a minute; the Go client allows 5."""
SECRETS_REMEMBERED = 32
_M = TypeVar("_M", bound=BaseModel)
_R = TypeVar("_R")

Sleeper = Callable[[float], None]
TokenSource = Callable[[], str]
"""Gives the PAT or a GitHub App installation token, fresh enough to use now."""

_RETRYABLE_TRANSPORT_ERRORS = (
    httpx.TimeoutException,
    httpx.NetworkError,
    httpx.RemoteProtocolError,
)


@dataclass(frozen=True)
class _Answer:
    what: str  # "METHOD /path", for messages
    status: int
    headers: httpx.Headers
    content: bytes
    attempts: int


class ScaleSetClient:
    """The scale-set API of one configuration URL (enterprise, organization or repository).

    Safe to share between threads: the admin connection is renewed under a lock, and calls
    run concurrently (a session's long poll does not hold up the others).
    """

    def __init__(
        self,
        config_url: str,
        github_token: TokenSource,
        *,
        clock: Clock,
        sleep: Sleeper = time.sleep,
        retry: RetryPolicy | None = None,
        api_url: str | None = None,
        system_info: SystemInfo | None = None,
        http: httpx.Client | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        self.config: GitHubConfig = parse_config_url(config_url, api_url)
        self._github_token = github_token
        self._clock = clock
        self._sleep = sleep
        self.retry = retry or RetryPolicy()
        self._user_agent = (system_info or SystemInfo()).user_agent()
        self._own_http = http is None
        self._http = http or httpx.Client(timeout=timeout, follow_redirects=False)
        self._lock = threading.Lock()
        self._secrets: deque[str] = deque(maxlen=SECRETS_REMEMBERED)
        self._service_url: str | None = None
        self._admin_token: str | None = None
        self._admin_expires_at: datetime | None = None

    def __repr__(self) -> str:
        return f"ScaleSetClient(config_url={self.config.config_url!r})"

    def close(self) -> None:
        if self._own_http:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- admin connection -------------------------------------------------------------------

    @property
    def actions_service_url(self) -> str:
        """The tenant's Actions service URL (connecting first if need be)."""
        return self._admin()[0]

    @property
    def admin_token_expires_at(self) -> datetime | None:
        return self._admin_expires_at

    def _admin(self) -> tuple[str, str]:
        with self._lock:
            stale = admin_token_stale(self._admin_expires_at, self._clock.now())
            if self._service_url is None or self._admin_token is None or stale:
                self._connect()
            assert self._service_url is not None and self._admin_token is not None
            return self._service_url, self._admin_token

    def _connect(self) -> None:
        github_token = self._github_token()
        if not github_token:
            raise ScaleSetConfigError("the GitHub token source gave no token")
        self._remember(github_token)
        api = self.config.api_url
        answer = self._send(
            "POST",
            api + registration_token_path(self.config.scope),
            {
                "Accept": "application/vnd.github+json",
                "Authorization": f"Bearer {github_token}",
            },
        )
        registration = self._parse(RegistrationToken, self._expect(answer, 201), answer)
        token = registration.token.get_secret_value()
        self._remember(token)
        body = {"url": self.config.config_url, "runner_event": "register"}
        answer = self._send(
            "POST",
            api + RUNNER_REGISTRATION,
            {"Content-Type": "application/json", "Authorization": f"RemoteAuth {token}"},
            _json(body),
            retry_auth=True,
        )
        if not 200 <= answer.status < 300:
            raise self._error(answer)
        connection = self._parse(AdminConnection, answer.content, answer)
        admin_token = connection.token.get_secret_value()
        self._remember(admin_token)
        try:
            expires_at = jwt_expiry(admin_token)
        except ScaleSetError as exc:
            raise self._scrubbed(exc) from None
        self._service_url, self._admin_token = connection.url, admin_token
        self._admin_expires_at = expires_at

    def _forget_admin_token(self, token: str) -> None:
        with self._lock:
            if self._admin_token == token:
                self._admin_token = None

    # -- runner groups and scale sets (client.go) -------------------------------------------

    def get_runner_group_by_name(self, name: str) -> RunnerGroup:
        answer = self._service("GET", RUNNER_GROUPS, [("groupName", name)])
        groups = self._parse(RunnerGroupList, self._expect(answer, 200), answer).value
        if len(groups) != 1:
            found = "no" if not groups else "several"
            raise ScaleSetError(f"{answer.what}: {found} runner groups named {name!r}")
        return groups[0]

    def get_runner_scale_set(self, runner_group_id: int, name: str) -> RunnerScaleSet | None:
        """The scale set of that name in the runner group; None if there is none."""
        query = [("runnerGroupId", str(runner_group_id)), ("name", name)]
        answer = self._service("GET", SCALE_SETS, query)
        found = self._parse(RunnerScaleSetList, self._expect(answer, 200), answer).value
        if len(found) > 1:
            raise ScaleSetError(f"{answer.what}: several runner scale sets named {name!r}")
        return found[0] if found else None

    def get_runner_scale_set_by_id(self, scale_set_id: int) -> RunnerScaleSet:
        answer = self._service("GET", f"{SCALE_SETS}/{scale_set_id}")
        return self._parse(RunnerScaleSet, self._expect(answer, 200), answer)

    def create_runner_scale_set(self, spec: RunnerScaleSetSpec) -> RunnerScaleSet:
        """Names are unique within a runner group."""
        try:
            body = spec.create_body()
        except ValueError as exc:
            raise ScaleSetConfigError(str(exc)) from None
        answer = self._service("POST", SCALE_SETS, body=body)
        return self._parse(RunnerScaleSet, self._expect(answer, 200), answer)

    def update_runner_scale_set(
        self, scale_set_id: int, spec: RunnerScaleSetSpec
    ) -> RunnerScaleSet:
        """Changes what `spec` sets; what it leaves empty stays as it is."""
        answer = self._service("PATCH", f"{SCALE_SETS}/{scale_set_id}", body=spec.update_body())
        return self._parse(RunnerScaleSet, self._expect(answer, 200), answer)

    def delete_runner_scale_set(self, scale_set_id: int) -> None:
        self._expect(self._service("DELETE", f"{SCALE_SETS}/{scale_set_id}"), 204)

    # -- runners -----------------------------------------------------------------------------

    def generate_jit_runner_config(
        self, scale_set_id: int, name: str, work_folder: str = "_work"
    ) -> RunnerScaleSetJitRunnerConfig:
        """Register a runner of the scale set; its process starts with the encoded config.
        A name already registered raises `RunnerExistsError`."""
        body = {"name": name, "workFolder": work_folder}
        answer = self._service("POST", f"{SCALE_SETS}/{scale_set_id}/generatejitconfig", body=body)
        config = self._parse(RunnerScaleSetJitRunnerConfig, self._expect(answer, 200), answer)
        self._remember(config.encoded_jit_config.get_secret_value())
        return config

    def get_runner(self, runner_id: int) -> RunnerReference:
        answer = self._service("GET", f"{RUNNERS}/{runner_id}")
        return self._parse(RunnerReference, self._expect(answer, 200), answer)

    def get_runner_by_name(self, name: str) -> RunnerReference | None:
        answer = self._service("GET", RUNNERS, [("agentName", name)])
        found = self._parse(RunnerReferenceList, self._expect(answer, 200), answer).value
        if len(found) > 1:
            raise ScaleSetError(f"{answer.what}: several runners named {name!r}")
        return found[0] if found else None

    def remove_runner(self, runner_id: int) -> None:
        """Unregister a runner: `RunnerNotFoundError` if it is gone, `JobStillRunningError`
        while it runs a job."""
        self._expect(self._service("DELETE", f"{RUNNERS}/{runner_id}"), 204)

    # -- message sessions (session_client.go) -----------------------------------------------

    def create_message_session(self, scale_set_id: int, owner: str) -> MessageSession:
        """Open the scale set's one session; `SessionConflictError` while another is open."""
        answer = self._service(
            "POST", f"{SCALE_SETS}/{scale_set_id}/sessions", body={"ownerName": owner}
        )
        if answer.status == 409:
            raise self._error(answer, SessionConflictError)
        session = self._parse(RunnerScaleSetSession, self._expect(answer, 200), answer)
        self._remember(session.message_queue_access_token.get_secret_value())
        return MessageSession(self, scale_set_id, session)

    def refresh_message_session(self, scale_set_id: int, session_id: UUID) -> RunnerScaleSetSession:
        """The session with a new message queue token."""
        answer = self._service("PATCH", f"{SCALE_SETS}/{scale_set_id}/sessions/{session_id}")
        session = self._parse(RunnerScaleSetSession, self._expect(answer, 200), answer)
        self._remember(session.message_queue_access_token.get_secret_value())
        return session

    def delete_message_session(self, scale_set_id: int, session_id: UUID) -> None:
        answer = self._service("DELETE", f"{SCALE_SETS}/{scale_set_id}/sessions/{session_id}")
        self._expect(answer, 204)

    # -- requests ----------------------------------------------------------------------------

    def _service(
        self,
        method: str,
        path: str,
        query: Iterable[tuple[str, str]] = (),
        *,
        body: Any = None,
        token: str | None = None,
    ) -> _Answer:
        """A call to the Actions service, with the admin token unless `token` is given."""
        base, admin_token = self._admin()
        headers = {
            "Content-Type": "application/json",
            "Authorization": f"Bearer {token or admin_token}",
        }
        content = None if body is None else _json(body)
        answer = self._send(method, service_url(base, path, query), headers, content)
        if answer.status == 401 and token is None:
            # The service no longer takes it: the next call connects again.
            self._forget_admin_token(admin_token)
        return answer

    def _send(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        content: bytes | None = None,
        *,
        retry_auth: bool = False,
    ) -> _Answer:
        """One call, tried again by the retry policy; the last answer whatever its status."""
        what = f"{method} {url_path(url)}"
        policy = self.retry
        headers = {"User-Agent": self._user_agent, **headers}
        for retry_index in range(policy.retry_max + 1):
            attempts = retry_index + 1
            last = retry_index == policy.retry_max
            try:
                response = self._http.request(method, url, headers=headers, content=content)
            except _RETRYABLE_TRANSPORT_ERRORS as exc:
                if last:
                    raise self._transport_error(what, exc, attempts) from exc
                wait = backoff(policy, retry_index)
            except httpx.HTTPError as exc:
                raise self._transport_error(what, exc, attempts) from exc
            else:
                answer = _Answer(
                    what, response.status_code, response.headers, response.content, attempts
                )
                if not should_retry(answer.status, answer.headers, retry_auth=retry_auth):
                    return answer
                now = self._clock.now()
                wait = retry_wait(policy, retry_index, answer.status, answer.headers, now)
                throttled = answer.status == 429 or github_rate_limited(answer.headers)
                if wait > policy.max_rate_limit_wait or (last and throttled):
                    raise self._rate_limited(answer, wait)
                if last:
                    return answer
            self._sleep(wait)
        raise AssertionError("unreachable: the last attempt returns or raises")

    # -- answers and errors ------------------------------------------------------------------

    def _expect(self, answer: _Answer, status: int) -> bytes:
        if answer.status != status:
            raise self._error(answer)
        return answer.content

    def _parse(self, model: type[_M], content: bytes, answer: _Answer) -> _M:
        try:
            return parse_answer(model, content, f"{answer.what}: answer")
        except ScaleSetError as exc:
            raise self._scrubbed(exc) from None

    def _error(
        self, answer: _Answer, kind: type[ScaleSetHTTPError] | None = None
    ) -> ScaleSetHTTPError:
        return error_for_answer(
            answer.what,
            answer.status,
            answer.headers,
            self._scrub_bytes(answer.content),
            attempts=answer.attempts,
            kind=kind,
        )

    def _rate_limited(self, answer: _Answer, wait: float) -> ScaleSetRateLimitedError:
        error = self._error(answer)
        return ScaleSetRateLimitedError(
            f"{error} (retry after {wait:.0f} s)",
            answer.status,
            retry_after=wait,
            activity_id=error.activity_id,
            request_id=error.request_id,
            attempts=answer.attempts,
        )

    def _transport_error(
        self, what: str, exc: httpx.HTTPError, attempts: int
    ) -> ScaleSetTransportError:
        detail = self._scrub(str(exc))[:200]
        return ScaleSetTransportError(
            f"{what} failed (attempts={attempts}): {type(exc).__name__}: {detail}"
        )

    def _remember(self, secret: str) -> None:
        if secret and secret not in self._secrets:
            self._secrets.append(secret)

    def _scrub(self, text: str) -> str:
        for secret in tuple(self._secrets):
            text = text.replace(secret, "***")
        return text

    def _scrub_bytes(self, content: bytes) -> bytes:
        for secret in tuple(self._secrets):
            content = content.replace(secret.encode(), b"***")
        return content

    def _scrubbed(self, error: ScaleSetError) -> ScaleSetError:
        text = self._scrub(str(error))
        return type(error)(text, error.status)


class MessageSession:
    """A listener's session of one scale set: poll, acknowledge, acquire. A call the queue
    refuses with 401 refreshes the session and is tried once more (`session_client.go`).

    Safe to share between threads; calls on one session run one at a time.
    """

    def __init__(
        self, client: ScaleSetClient, scale_set_id: int, session: RunnerScaleSetSession
    ) -> None:
        self._client = client
        self.scale_set_id = scale_set_id
        self._session = session
        self._lock = threading.Lock()
        self._closed = False

    def __repr__(self) -> str:
        return (
            f"MessageSession(scale_set_id={self.scale_set_id}, "
            f"session_id={self._session.session_id})"
        )

    @property
    def session(self) -> RunnerScaleSetSession:
        return self._session

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Delete the session, so another listener may open one; once only."""
        with self._lock:
            if self._closed:
                return
            self._client.delete_message_session(self.scale_set_id, self._session.session_id)
            self._closed = True

    def refresh(self) -> RunnerScaleSetSession:
        with self._lock:
            return self._refresh()

    def get_message(
        self, last_message_id: int = 0, max_capacity: int = 0
    ) -> RunnerScaleSetMessage | None:
        """The next message after `last_message_id`, or None when the service has none (a
        long poll that ended empty: 202, or no body). `max_capacity` is how many more jobs
        the scale set can take. A message not deleted is delivered again to a poll that does
        not skip it."""
        if last_message_id < 0:
            raise ScaleSetConfigError("last_message_id must not be negative")
        if not 0 <= max_capacity <= MAX_CAPACITY:
            raise ScaleSetConfigError(f"max_capacity must be between 0 and {MAX_CAPACITY}")
        with self._lock:
            return self._with_refresh(lambda: self._get_message(last_message_id, max_capacity))

    def delete_message(self, message_id: int) -> None:
        """Acknowledge a message: it is not delivered again."""
        with self._lock:
            self._with_refresh(lambda: self._delete_message(message_id))

    def acquire_jobs(self, request_ids: Sequence[int]) -> tuple[int, ...]:
        """Ask for the jobs offered by `JobAvailable`; the answer lists those acquired."""
        if not request_ids:
            return ()
        with self._lock:
            return self._with_refresh(lambda: self._acquire_jobs(list(request_ids)))

    def _with_refresh(self, call: Callable[[], _R]) -> _R:
        try:
            return call()
        except MessageQueueTokenExpiredError:
            self._refresh()
            return call()

    def _refresh(self) -> RunnerScaleSetSession:
        self._session = self._client.refresh_message_session(
            self.scale_set_id, self._session.session_id
        )
        return self._session

    def _queue_headers(self) -> dict[str, str]:
        token = self._session.message_queue_access_token.get_secret_value()
        return {"Authorization": f"Bearer {token}"}

    def _get_message(self, last_message_id: int, max_capacity: int) -> RunnerScaleSetMessage | None:
        client = self._client
        query = [("lastMessageId", str(last_message_id))] if last_message_id > 0 else []
        url = with_path_suffix(self._session.message_queue_url, "", query)
        headers = {
            **self._queue_headers(),
            "Accept": f"application/json; api-version={API_VERSION}",
            MAX_CAPACITY_HEADER: str(max_capacity),
        }
        answer = client._send("GET", url, headers)
        if answer.status == 401:
            raise client._error(answer, MessageQueueTokenExpiredError)
        # A long poll that ends with nothing: 202 (the service's way), or no body at all.
        if answer.status in (202, 204):
            return None
        content = client._expect(answer, 200)
        if not content.removeprefix(b"\xef\xbb\xbf").strip():
            return None
        try:
            return parse_message(content)
        except ScaleSetError as exc:
            raise client._scrubbed(exc) from None

    def _delete_message(self, message_id: int) -> None:
        client = self._client
        url = with_path_suffix(self._session.message_queue_url, str(message_id))
        headers = {**self._queue_headers(), "Content-Type": "application/json"}
        answer = client._send("DELETE", url, headers)
        if answer.status == 401:
            raise client._error(answer, MessageQueueTokenExpiredError)
        client._expect(answer, 204)

    def _acquire_jobs(self, request_ids: list[int]) -> tuple[int, ...]:
        client = self._client
        token = self._session.message_queue_access_token.get_secret_value()
        path = f"{SCALE_SETS}/{self.scale_set_id}/acquirejobs"
        answer = client._service("POST", path, body=request_ids, token=token)
        if answer.status == 401:
            raise client._error(answer, MessageQueueTokenExpiredError)
        return client._parse(AcquiredJobs, client._expect(answer, 200), answer).value


def _json(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()
