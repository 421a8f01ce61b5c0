"""GitHub's REST rules, as pure functions: paths, pagination, how answers are classified
(errors, rate limits, runner removals) and parsed into the port's types.

The PyGithub adapter and the simulated world's in-process port both use this module, so a
simulated GitHub is read exactly as the real one.
"""

from __future__ import annotations

import json
import math
import re
import urllib.parse
from collections.abc import Mapping
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any

from github.Requester import Requester

from hooks.clock import parse_time
from hooks.github.port import (
    MAX_RATE_LIMIT_WAIT,
    ConflictError,
    GitHubError,
    GitHubRunner,
    RateLimitedError,
    RegistrationToken,
    RemoveOutcome,
    RunnerGroupInfo,
    Scope,
    WorkflowJob,
    WorkflowRun,
)

PER_PAGE = 100  # GitHub's maximum for every list used here
# GitHub documents this wait for a secondary rate limit that names no time to wait.
SECONDARY_RATE_LIMIT_WAIT = 60.0
MAX_PAGES = 1000  # a guard against a server whose Link header never ends
JOBS_PER_PAGE = 50  # ARC's page size for a run's jobs
BUSY_MESSAGE = "is still running a job"


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


def header(headers: Mapping[str, Any] | None, name: str) -> str | None:
    if not headers:
        return None
    for key, value in headers.items():
        if key.lower() == name:
            return str(value)
    return None


def error_message(data: Any) -> str:
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
        to_float(header(headers, "x-ratelimit-remaining")) == 0
        or header(headers, "retry-after") is not None
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
    remaining = header(headers, "x-ratelimit-remaining")
    if remaining is not None and to_float(remaining) == 0:
        reset = to_float(header(headers, "x-ratelimit-reset"))
        waits.append(reset - now.timestamp() if reset is not None else SECONDARY_RATE_LIMIT_WAIT)
    retry_after = header(headers, "retry-after")
    if retry_after is not None:
        seconds = to_float(retry_after)
        if seconds is None:
            try:  # the HTTP-date form
                seconds = (parsedate_to_datetime(retry_after) - now).total_seconds()
            except (TypeError, ValueError):
                seconds = SECONDARY_RATE_LIMIT_WAIT
        waits.append(seconds)
    if not waits:
        waits.append(SECONDARY_RATE_LIMIT_WAIT)
    # A reset already in the past (clock skew) still must not invite a hot retry loop; one
    # further off than GitHub's hourly window is not GitHub's.
    return min(max(max(waits), 1.0), MAX_RATE_LIMIT_WAIT)


def to_float(value: str | None) -> float | None:
    """A header's number; None when it is none, or not finite ("inf", "nan", "1e999")."""
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def removal_outcome(status: int, headers: Mapping[str, Any] | None, message: str) -> RemoveOutcome:
    """Classify GitHub's answer to DELETE .../actions/runners/{id}. Only `204 No Content` says
    the runner was removed, as ARC's client has it: another success (a proxy, a stand-in) is
    an error, tried again, rather than a registration taken for gone and left behind."""
    if status == 204:
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


def call_outcome(template: str, status: int, headers: Mapping[str, Any], body: str) -> str:
    if template.startswith("DELETE ") and template.endswith("/actions/runners/{runner_id}"):
        return removal_outcome(status, headers, error_message(body)).value
    if is_rate_limited(status, headers, error_message(body)):
        return "rate_limited"
    return f"{status // 100}xx"


# What PyGithub or our parsing raise for an answer that is not what GitHub should send: a body
# that is not the documented JSON (KeyError, TypeError, ValueError, AttributeError), a Link or
# redirect to another host (AssertionError, RuntimeError).
MALFORMED_ANSWER = (KeyError, TypeError, ValueError, AttributeError, AssertionError, RuntimeError)


_REQUEST_ID = re.compile(r"\brequest ID\b", re.IGNORECASE)
_AFTER_PERIOD = re.compile(r"(?<=\.)")

MAX_ERROR_MESSAGE = 512
"""GitHub's own text kept in an error (it goes into status conditions): its messages are a
sentence or two; an answer that is not GitHub's could be any size."""


def stable_message(message: str) -> str:
    """GitHub's error text without the sentences quoting the response's own request ID (the
    secondary rate limit's do), and at most `MAX_ERROR_MESSAGE` characters. The text goes into
    status conditions: one that changed with every call rewrote the object at every sync, and
    each write synced it again. Sentence by sentence, so that the work grows with the text's
    length (one pattern spanning a sentence is retried from every position of a long one)."""
    if _REQUEST_ID.search(message):
        sentences = _AFTER_PERIOD.split(message)
        message = "".join(s for s in sentences if not _REQUEST_ID.search(s))
    message = message.strip()
    if len(message) > MAX_ERROR_MESSAGE:
        return message[: MAX_ERROR_MESSAGE - 1].rstrip() + "…"
    return message


def error_text(op: str, status: int, message: str) -> str:
    """What a failed call says, in status conditions too: the same text for the same kind of
    failure. A server error's code and text vary from call to call through one outage (500,
    502, 503, each with its own page), and each new text rewrote the status, which synced the
    object again, which called GitHub again."""
    if status >= 500:
        return f"{op}: GitHub server error (HTTP 5xx)"
    stable = stable_message(message)
    return f"{op}: HTTP {status}" + (f": {stable}" if stable else "")


def port_error(
    op: str, status: int, headers: Mapping[str, Any] | None, message: str, now: datetime
) -> GitHubError:
    text = error_text(op, status, message)
    wait = rate_limit_wait(status, headers, message, now)
    if wait is not None:
        return RateLimitedError(text, retry_after=wait, status=status)
    if status == 409:
        return ConflictError(text, status)
    return GitHubError(text, status)


def quote_segment(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


def scope_path(scope: Scope) -> str:
    if scope.repository:
        owner, _, repo = scope.repository.partition("/")
        return f"/repos/{quote_segment(owner)}/{quote_segment(repo)}"
    if scope.organization:
        return f"/orgs/{quote_segment(scope.organization)}"
    if scope.enterprise:
        return f"/enterprises/{quote_segment(scope.enterprise)}"
    raise GitHubError("a scope needs an enterprise, an organization or a repository")


def parse_runner(data: Mapping[str, Any]) -> GitHubRunner:
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


def parse_registration_token(data: Mapping[str, Any]) -> RegistrationToken:
    return RegistrationToken(
        token=str(data["token"]), expires_at=parse_time(str(data["expires_at"]))
    )


def parse_workflow_run(data: Mapping[str, Any]) -> WorkflowRun:
    return WorkflowRun(id=int(data.get("id") or 0), status=str(data.get("status") or ""))


def parse_workflow_job(data: Mapping[str, Any]) -> WorkflowJob:
    return WorkflowJob(
        status=str(data.get("status") or ""),
        labels=tuple(str(label) for label in data.get("labels") or ()),
        id=int(data.get("id") or 0),
    )


def parse_runner_group(data: Mapping[str, Any]) -> RunnerGroupInfo:
    return RunnerGroupInfo(
        id=int(data["id"]),
        name=str(data["name"]),
        default=bool(data.get("default", False)),
        inherited=bool(data.get("inherited", False)),
    )


def next_link(headers: Mapping[str, Any]) -> str | None:
    link = header(headers, "link")
    if not link:
        return None
    for part in link.split(","):
        url, _, params = part.partition(";")
        if re.search(r'rel="?next"?', params):
            return url.strip().strip("<>")
    return None
