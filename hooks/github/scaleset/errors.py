"""Typed errors of the scale-set client, and how an error answer is read.

Every error is a `hooks.github.port.GitHubError`, so code that already handles GitHub failures
handles these. No error ever carries a token: messages name the method and path of the call
(never its query), the status, the service's activity id and its exception, and the client
scrubs every token it holds from the text before raising.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from hooks.github.port import GitHubError

ACTIVITY_ID_HEADER = "ActivityId"
GITHUB_REQUEST_ID_HEADER = "X-GitHub-Request-Id"
MAX_BODY_SHOWN = 300


class ScaleSetError(GitHubError):
    """A scale-set call failed."""

    def __init__(
        self,
        message: str,
        status: int | None = None,
        *,
        activity_id: str | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message, status)
        self.activity_id = activity_id
        self.request_id = request_id


class ScaleSetConfigError(ScaleSetError, ValueError):
    """A configuration URL, or an argument, the protocol cannot use; nothing was sent."""


class ScaleSetTransportError(ScaleSetError):
    """No answer at all (connection refused or reset, timeout), after the retries."""


class MalformedResponseError(ScaleSetError):
    """An answer whose body is not what the protocol says it is."""


class ScaleSetHTTPError(ScaleSetError):
    """An answer with a status the call does not expect. `exception_name` and
    `exception_message` are the service's own (`typeName`, `message`) when it sent them."""

    def __init__(
        self,
        message: str,
        status: int | None = None,
        *,
        activity_id: str | None = None,
        request_id: str | None = None,
        exception_name: str = "",
        exception_message: str = "",
        attempts: int = 1,
    ) -> None:
        super().__init__(message, status, activity_id=activity_id, request_id=request_id)
        self.exception_name = exception_name
        self.exception_message = exception_message
        self.attempts = attempts


class RunnerNotFoundError(ScaleSetHTTPError):
    pass


class RunnerExistsError(ScaleSetHTTPError):
    pass


class JobStillRunningError(ScaleSetHTTPError):
    pass


class SessionConflictError(ScaleSetHTTPError):
    """409 on creating a session: the scale set already has a listener. Wait for that
    session to be deleted or to expire, then create one again."""


class MessageQueueTokenExpiredError(ScaleSetHTTPError):
    """401 from the message queue (or job acquisition), even after refreshing the session."""


class ScaleSetRateLimitedError(ScaleSetHTTPError):
    """Throttled (429, or GitHub's rate limit): do not call again for `retry_after` seconds."""

    def __init__(
        self,
        message: str,
        status: int | None,
        *,
        retry_after: float,
        activity_id: str | None = None,
        request_id: str | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(
            message, status, activity_id=activity_id, request_id=request_id, attempts=attempts
        )
        self.retry_after = retry_after


# The service's exception names and the errors they become (`errors.go` of actions/scaleset,
# MIT license): matched as substrings, as the service qualifies them with their namespace.
EXCEPTION_ERRORS: tuple[tuple[str, type[ScaleSetHTTPError]], ...] = (
    ("AgentExistsException", RunnerExistsError),
    ("AgentNotFoundException", RunnerNotFoundError),
    ("JobStillRunningException", JobStillRunningError),
)


def _header(headers: Mapping[str, str], name: str) -> str | None:
    lowered = name.lower()
    for key, value in headers.items():
        if key.lower() == lowered:
            return value
    return None


def read_error_body(headers: Mapping[str, str], body: bytes) -> tuple[str, str]:
    """(exception name, message) of an error answer: the service's `{typeName, message}`,
    GitHub's `{message}`, or the text itself (cut short)."""
    text = body.removeprefix(b"\xef\xbb\xbf").decode("utf-8", "replace").strip()
    if not text:
        return "", ""
    if "text/plain" not in (_header(headers, "content-type") or ""):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            name, message = data.get("typeName"), data.get("message")
            return (
                name if isinstance(name, str) else "",
                message[:MAX_BODY_SHOWN] if isinstance(message, str) else "",
            )
    return "", text[:MAX_BODY_SHOWN]


def error_for_answer(
    what: str,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    attempts: int = 1,
    kind: type[ScaleSetHTTPError] | None = None,
) -> ScaleSetHTTPError:
    """The typed error for an unexpected answer. `kind` wins over the exception-name table
    (a 409 on creating a session is a conflict whatever the service calls it)."""
    # The body of an unexpected 2xx is never shown: it may be an answer that carries a token.
    name, message = ("", "") if 200 <= status < 300 else read_error_body(headers, body)
    activity_id = _header(headers, ACTIVITY_ID_HEADER)
    request_id = _header(headers, GITHUB_REQUEST_ID_HEADER)
    details = [f"status={status}"]
    if activity_id:
        details.append(f"activity_id={activity_id}")
    if request_id:
        details.append(f"github_request_id={request_id}")
    if attempts > 1:
        details.append(f"attempts={attempts}")
    if 200 <= status < 300:
        reason = "unexpected status"
    else:
        reason = f"{name}: {message}" if name else (message or "unknown error")
    text = f"{what} failed ({', '.join(details)}): {reason}"
    if kind is None:
        kind = next(
            (error for exception, error in EXCEPTION_ERRORS if exception in name),
            ScaleSetHTTPError,
        )
    return kind(
        text,
        status,
        activity_id=activity_id,
        request_id=request_id,
        exception_name=name,
        exception_message=message,
        attempts=attempts,
    )


_PER_CALL_DETAIL = re.compile(
    r", (?:activity_id|github_request_id|attempts)=[^,)]*|\(attempts=\d+\)|"
    r" \(retry after \d+ s\)"
)


def stable_text(error: ScaleSetError) -> str:
    """The error's text as the hooks show it in status conditions: without what differs from
    call to call (the service's activity and request ids, the attempts, a countdown), and one
    text for every server error or missing answer, whose codes and pages vary through one
    outage; each new text rewrote the status, whose write synced the object again (found in
    review). The full text is in the log."""
    text = str(error)
    what = text.split(" failed", 1)[0]
    if isinstance(error, ScaleSetTransportError):
        return f"{what} failed: no answer from the scale-set service"
    if error.status is not None and error.status >= 500:
        return f"{what} failed: scale-set service error (HTTP 5xx)"
    return " ".join(_PER_CALL_DETAIL.sub("", text).split())
