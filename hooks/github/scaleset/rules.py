"""The scale-set protocol's rules as pure functions: which scope a configuration URL names and
where its GitHub API is (`config.go`), when a call is tried again and how long to wait first
(the `go-retryablehttp` policy `client.go` and `common_client.go` configure), when the admin
token is renewed (`client.go`), and the Actions service URLs (`client.go`).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

from hooks.github.port import Scope
from hooks.github.scaleset.errors import MalformedResponseError, ScaleSetConfigError

API_VERSION = "6.0-preview"
ADMIN_TOKEN_MARGIN = timedelta(seconds=60)
"""The admin token is renewed when it has less than this left."""
HOSTED_HOSTS = ("github.com", "www.github.com", "github.localhost")
HOSTED_SUFFIX = ".ghe.com"


# -- configuration URL -----------------------------------------------------------------------


@dataclass(frozen=True)
class GitHubConfig:
    """A configuration URL (`https://github.com/acme`, `.../acme/app`, `.../enterprises/x`):
    the scope it names and the GitHub API that serves it."""

    config_url: str
    scope: Scope
    api_url: str


def is_hosted(host: str) -> bool:
    """github.com and GHE.com answer their API on `api.<host>`; a GHES host under /api/v3."""
    host = host.lower()
    return host in HOSTED_HOSTS or host.endswith(HOSTED_SUFFIX)


def parse_config_url(config_url: str, api_url: str | None = None) -> GitHubConfig:
    """The scope and API URL of a configuration URL; `api_url` overrides the derived one."""
    trimmed = config_url.strip().strip("/")
    try:
        parts = urllib.parse.urlsplit(trimmed)
        host = parts.netloc
        parts.port  # noqa: B018 -- raises on a port that is not a number
    except ValueError:
        raise ScaleSetConfigError("the configuration URL is not a URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ScaleSetConfigError("the configuration URL needs an http(s) scheme and a host")
    if parts.query or parts.fragment or "@" in host:
        raise ScaleSetConfigError("the configuration URL must not carry a query or credentials")
    segments = [urllib.parse.unquote(s) for s in parts.path.strip("/").split("/")]
    if any(not s or "/" in s or s in (".", "..") for s in segments) or len(segments) > 2:
        raise ScaleSetConfigError(
            "the configuration URL should point to an enterprise, organization or repository"
        )
    if len(segments) == 1:
        scope = Scope(organization=segments[0])
    elif segments[0].lower() == "enterprises":
        scope = Scope(enterprise=segments[1])
    else:
        scope = Scope(repository=f"{segments[0]}/{segments[1]}")
    if api_url is None:
        if is_hosted(parts.hostname):
            api_host = "api.github.com" if host.lower() == "www.github.com" else f"api.{host}"
            api_url = f"{parts.scheme}://{api_host}"
        else:
            api_url = f"{parts.scheme}://{host}/api/v3"
    return GitHubConfig(config_url=trimmed, scope=scope, api_url=api_url.rstrip("/"))


def registration_token_path(scope: Scope) -> str:
    quote = _quote
    if scope.repository:
        owner, _, name = scope.repository.partition("/")
        return f"/repos/{quote(owner)}/{quote(name)}/actions/runners/registration-token"
    if scope.organization:
        return f"/orgs/{quote(scope.organization)}/actions/runners/registration-token"
    return f"/enterprises/{quote(scope.enterprise)}/actions/runners/registration-token"


def _quote(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


# -- Actions service URLs --------------------------------------------------------------------


def service_url(base: str, path: str, query: Iterable[tuple[str, str]] = ()) -> str:
    """`path` under the tenant's service URL, with `api-version` unless the query has one."""
    split = urllib.parse.urlsplit(base)
    joined = split.path.rstrip("/") + "/" + path.lstrip("/")
    pairs = urllib.parse.parse_qsl(split.query, keep_blank_values=True) + list(query)
    if not any(key == "api-version" for key, _ in pairs):
        pairs.append(("api-version", API_VERSION))
    return urllib.parse.urlunsplit(
        (split.scheme, split.netloc, joined, urllib.parse.urlencode(pairs), "")
    )


def with_path_suffix(url: str, suffix: str, query: Iterable[tuple[str, str]] = ()) -> str:
    """`url` with `/suffix` after its path and `query` after its own (a queue message URL)."""
    split = urllib.parse.urlsplit(url)
    path = split.path.rstrip("/") + ("/" + suffix if suffix else "")
    pairs = urllib.parse.parse_qsl(split.query, keep_blank_values=True) + list(query)
    return urllib.parse.urlunsplit(
        (split.scheme, split.netloc, path, urllib.parse.urlencode(pairs), "")
    )


def url_path(url: str) -> str:
    """What an error message may say of a URL: its path, never its query."""
    return urllib.parse.urlsplit(url).path or "/"


# -- admin token -----------------------------------------------------------------------------


def jwt_expiry(token: str) -> datetime:
    """The `exp` of a JWT, read without checking its signature (only the service can)."""
    malformed = MalformedResponseError("the admin token is not a JWT with an expiry")
    parts = token.split(".")
    if len(parts) != 3:
        raise malformed
    try:
        payload = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
        claims = json.loads(payload)
    except (binascii.Error, ValueError):
        raise malformed from None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    if isinstance(exp, bool) or not isinstance(exp, int | float) or not math.isfinite(exp):
        raise malformed
    try:
        return datetime.fromtimestamp(exp, UTC)
    except (OverflowError, OSError, ValueError):
        raise malformed from None


def admin_token_stale(expires_at: datetime | None, now: datetime) -> bool:
    return expires_at is None or now + ADMIN_TOKEN_MARGIN >= expires_at


# -- retries ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetryPolicy:
    """`retry_max` retries after the first attempt, waiting `wait_min * 2**n` capped at
    `wait_max` (the Go client's 4, 1 s and 30 s), or what the server asks for. A server that
    asks for more than `max_rate_limit_wait` gets no retry: the call raises
    `ScaleSetRateLimitedError` at once with the wait, for the caller to schedule."""

    retry_max: int = 4
    wait_min: float = 1.0
    wait_max: float = 30.0
    max_rate_limit_wait: float = 300.0


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def github_rate_limited(headers: Mapping[str, str]) -> bool:
    """GitHub's primary rate limit: `x-ratelimit-remaining: 0`."""
    return _number(_header(headers, "x-ratelimit-remaining")) == 0


def should_retry(status: int, headers: Mapping[str, str], *, retry_auth: bool = False) -> bool:
    """`DefaultRetryPolicy` of go-retryablehttp: 429 and any 5xx but 501. `retry_auth` adds
    401 and 403, as `client.go` does for the runner-registration call (a registration token
    is not always usable at once). A 403 of GitHub's rate limit is retried after its reset."""
    if status == 429 or (status >= 500 and status != 501):
        return True
    if retry_auth and status in (401, 403):
        return True
    return status == 403 and (
        github_rate_limited(headers) or _header(headers, "retry-after") is not None
    )


def retry_after(headers: Mapping[str, str], now: datetime) -> float | None:
    """`Retry-After` in seconds (its delay-seconds or HTTP-date form), None if absent or
    unreadable."""
    value = _header(headers, "retry-after")
    if value is None:
        return None
    seconds = _number(value)
    if seconds is None:
        try:
            seconds = (parsedate_to_datetime(value) - now).total_seconds()
        except (TypeError, ValueError, IndexError):
            return None
    return max(seconds, 0.0)


def backoff(policy: RetryPolicy, retry_index: int) -> float:
    """The exponential wait before retry number `retry_index` (0 for the first)."""
    return min(policy.wait_min * 2.0 ** min(retry_index, 62), policy.wait_max)


def retry_wait(
    policy: RetryPolicy, retry_index: int, status: int, headers: Mapping[str, str], now: datetime
) -> float:
    """How long to wait before retrying an answer `should_retry` accepted: what a 429 or 503
    asks with `Retry-After` (`DefaultBackoff` of go-retryablehttp honours it for those two),
    else until GitHub's rate-limit reset, else the exponential backoff."""
    if status in (429, 503, 403):
        asked = retry_after(headers, now)
        if asked is not None:
            return asked
    if status in (403, 429) and github_rate_limited(headers):
        reset = _number(_header(headers, "x-ratelimit-reset"))
        if reset is not None:
            return max(reset - now.timestamp(), policy.wait_min)
    return backoff(policy, retry_index)


# -- user agent ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SystemInfo:
    """Who calls, as the `User-Agent` tells the service (a JSON object, as the Go client's)."""

    system: str = "arc-hooks"
    version: str = "0.1.0"
    commit_sha: str = "unknown"
    scale_set_id: int = 0
    subsystem: str = "listener"

    def user_agent(self) -> str:
        return json.dumps({**asdict(self), "kind": "scaleset"}, separators=(",", ":"))
