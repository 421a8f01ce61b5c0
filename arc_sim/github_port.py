"""The GitHub port on the fake GitHub, in process: no socket, no thread, no HTTP client.

Each call goes through the fake's one request pipeline (`GitHubApi.handle`: auth, faults, rate
limits, request log, endpoints), exactly as an HTTP request to its ASGI app does. Answers are
classified with the PyGithub adapter's own functions, so a simulated world that uses this port
sees the same results, errors and metrics as one that uses PyGithub over loopback, only much
faster. Wrap it in `CachedGitHub`, as `github_from_settings` wraps the real adapter.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from arc_sim.fake_github import FakeGitHub
from arc_sim.github_api import DOTCOM_API, ApiResponse
from hooks.clock import Clock
from hooks.github.credentials import DEFAULT_CREDENTIALS
from hooks.github.list_pacing import LatestRateBudget
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
from hooks.github.pygithub_adapter import USER_AGENT, record_rate_limit
from hooks.github.rest import (
    JOBS_PER_PAGE,
    MALFORMED_ANSWER,
    MAX_PAGES,
    PER_PAGE,
    call_outcome,
    endpoint_template,
    error_message,
    error_text,
    next_link,
    parse_registration_token,
    parse_runner,
    parse_runner_group,
    parse_workflow_job,
    parse_workflow_run,
    port_error,
    rate_limit_wait,
    removal_outcome,
)
from hooks.metrics import GITHUB_API_CALLS

T = TypeVar("T")
Json = dict[str, Any]


class InProcessGitHub(GitHubPort):
    """GitHubPort on a FakeGitHub, authenticated with a token (a PAT or installation token)."""

    def __init__(
        self,
        fake: FakeGitHub,
        token: str,
        clock: Clock,
        *,
        base_url: str = DOTCOM_API,
        user_agent: str = USER_AGENT,
        credentials: str = DEFAULT_CREDENTIALS,
    ) -> None:
        self._fake = fake
        self._credentials = credentials  # the metrics label
        self._token = token
        self._clock = clock
        self.rate_budget = LatestRateBudget()  # the token's budget, as GitHub last told it
        parts = urllib.parse.urlsplit(base_url.rstrip("/"))
        self._origin = f"{parts.scheme}://{parts.netloc}"
        self._base_path = parts.path  # "/api/v3" for GitHub Enterprise Server
        self._headers = {
            "authorization": f"token {token}",
            "user-agent": user_agent,
            "accept": "application/vnd.github+json",
        }

    # The port

    def list_runners(
        self, scope: Scope, *, not_before: datetime | None = None
    ) -> Sequence[GitHubRunner]:
        def call() -> list[GitHubRunner]:
            runners = self._get_all(f"{scope.api_path}/actions/runners", "runners")
            return [parse_runner(item) for item in runners]

        return self._guard("list runners", scope, call)

    def runners_named(
        self, scope: Scope, name: str, *, not_before: datetime | None = None
    ) -> Sequence[GitHubRunner]:
        def call() -> list[GitHubRunner]:
            items = self._get_all(f"{scope.api_path}/actions/runners", "runners", {"name": name})
            return [runner for runner in map(parse_runner, items) if runner.name == name]

        return self._guard(f"find runner {name!r}", scope, call)

    def registration_token(self, scope: Scope) -> RegistrationToken:
        def call() -> RegistrationToken:
            path = f"{scope.api_path}/actions/runners/registration-token"
            return parse_registration_token(self._json("POST", path))

        return self._guard("create registration token", scope, call)

    def generate_jit_config(
        self,
        scope: Scope,
        name: str,
        labels: Sequence[str],
        runner_group_id: int,
        work_folder: str,
    ) -> JitConfig:
        def call() -> JitConfig:
            body = {
                "name": name,
                "runner_group_id": runner_group_id,
                "labels": list(labels),
                "work_folder": work_folder,
            }
            path = f"{scope.api_path}/actions/runners/generate-jitconfig"
            data = self._json("POST", path, body)
            return JitConfig(
                runner=parse_runner(data["runner"]),
                encoded_jit_config=str(data["encoded_jit_config"]),
            )

        return self._guard(f"generate JIT config for {name!r}", scope, call)

    def runner_group_id(self, scope: Scope, group_name: str) -> int:
        if scope.repository:
            return repository_runner_group(scope, group_name)

        def call() -> int:
            path = f"{scope.api_path}/actions/runner-groups"
            groups = self._get_all(path, "runner_groups")
            return pick_runner_group(groups, group_name)

        return self._guard(f"find runner group {group_name!r}", scope, call)

    def list_workflow_runs(self, repository: str, status: str) -> Sequence[WorkflowRun]:
        scope = Scope(repository=repository)

        def call() -> list[WorkflowRun]:
            # Every page, as the adapter reads them.
            path = f"{scope.api_path}/actions/runs"
            runs = self._get_all(path, "workflow_runs", {"status": status})
            return [parse_workflow_run(item) for item in runs]

        return self._guard(f"list {status} workflow runs", scope, call)

    def list_workflow_jobs(self, repository: str, run_id: int) -> Sequence[WorkflowJob]:
        scope = Scope(repository=repository)

        def call() -> list[WorkflowJob]:
            path = f"{scope.api_path}/actions/runs/{int(run_id)}/jobs"
            jobs = self._get_all(path, "jobs", per_page=JOBS_PER_PAGE)
            return [parse_workflow_job(item) for item in jobs]

        return self._guard(f"list jobs of workflow run {int(run_id)}", scope, call)

    def visible_runner_groups(
        self, organization: str, repository_name: str
    ) -> Sequence[RunnerGroupInfo]:
        scope = Scope(organization=organization)

        def call() -> list[RunnerGroupInfo]:
            path = f"{scope.api_path}/actions/runner-groups"
            query = {"visible_to_repository": repository_name}
            return [
                parse_runner_group(item) for item in self._get_all(path, "runner_groups", query)
            ]

        return self._guard(f"list runner groups visible to {repository_name!r}", scope, call)

    def remove_runner(
        self, scope: Scope, runner_id: int, *, not_before: datetime | None = None
    ) -> RemoveResult:
        op = f"remove runner {int(runner_id)}"
        answer = self._send("DELETE", f"{scope.api_path}/actions/runners/{int(runner_id)}")
        message = error_message(answer.body.decode())
        outcome = removal_outcome(answer.status, answer.headers, message)
        retry_after = None
        if outcome is RemoveOutcome.RATE_LIMITED:
            retry_after = rate_limit_wait(answer.status, answer.headers, message, self._clock.now())
        text = error_text(f"{op} in {scope}", answer.status, message)
        return RemoveResult(outcome, retry_after, self._redact(text))

    # Requests

    def _send(self, method: str, path: str, body: Json | None = None) -> ApiResponse:
        """One request through the fake's pipeline; `path` may carry a query string."""
        parts = urllib.parse.urlsplit(path)
        headers = dict(self._headers)
        data = b""
        if body is not None:
            data = json.dumps(body).encode()
            headers["content-type"] = "application/json"
        full_path = self._base_path + urllib.parse.unquote(parts.path)
        answer = self._fake.api.handle(
            method, full_path, parts.query, headers, data, base_url=self._origin
        )
        # Counted like every call of the PyGithub adapter (`instrument`).
        template = endpoint_template(method, full_path, self._base_path)
        # Only an error's message can change the outcome; a success's body need not be parsed.
        text = answer.body.decode() if answer.status >= 400 else ""
        outcome = call_outcome(template, answer.status, answer.headers, text)
        GITHUB_API_CALLS.labels(template, outcome, self._credentials).inc()
        record_rate_limit(answer.headers, self._credentials, self.rate_budget)
        return answer

    def _json(self, method: str, path: str, body: Json | None = None) -> Any:
        return self._checked(method, path, body)[1]

    def _checked(self, method: str, path: str, body: Json | None = None) -> tuple[ApiResponse, Any]:
        """As PyGithub's `requestJsonAndCheck`: any status from 400 on is an error."""
        answer = self._send(method, path, body)
        text = answer.body.decode()
        if answer.status >= 400:
            raise _StatusError(answer, error_message(text))
        return answer, json.loads(text) if text else None

    def _get_all(
        self,
        path: str,
        item: str,
        query: Mapping[str, str] | None = None,
        *,
        per_page: int = PER_PAGE,
    ) -> list[Mapping[str, Any]]:
        """Every item of a paginated list, following the Link header."""
        items: list[Mapping[str, Any]] = []
        parameters = urllib.parse.urlencode({**(query or {}), "per_page": per_page})
        url: str | None = f"{path}?{parameters}"
        seen: set[str] = set()
        while url is not None and url not in seen and len(seen) < MAX_PAGES:
            seen.add(url)
            answer, data = self._checked("GET", url)
            items.extend(data.get(item) or [])
            url = self._relative(next_link(answer.headers))
        return items

    def _relative(self, url: str | None) -> str | None:
        # Follow a next link on our own base URL, whatever host name the server put in it.
        if url is None:
            return None
        parts = urllib.parse.urlsplit(url)
        path = parts.path
        if self._base_path and path.startswith(self._base_path + "/"):
            path = path[len(self._base_path) :]
        return path + (f"?{parts.query}" if parts.query else "")

    def _guard(self, op: str, scope: Scope, call: Callable[[], T]) -> T:
        """Run a call and turn every failure into a port error, as the adapter's `_guard`."""
        what = f"{op} in {scope}"
        try:
            return call()
        except _StatusError as exc:
            answer = exc.answer
            message = self._redact(exc.message)
            raise port_error(
                what, answer.status, answer.headers, message, self._clock.now()
            ) from None
        except GitHubError as exc:
            text = f"{what}: {exc}"
            if isinstance(exc, RateLimitedError):
                raise RateLimitedError(text, exc.retry_after, exc.status) from None
            raise type(exc)(text, exc.status) from None
        except MALFORMED_ANSWER as exc:
            raise GitHubError(self._redact(f"{what}: {type(exc).__name__}: {exc}")) from None

    def _redact(self, text: str) -> str:
        return text.replace(self._token, "***") if self._token else text


class _StatusError(Exception):
    def __init__(self, answer: ApiResponse, message: str) -> None:
        super().__init__(message)
        self.answer = answer
        self.message = message
