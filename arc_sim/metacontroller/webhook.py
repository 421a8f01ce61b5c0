"""One hook call with Metacontroller's HTTP rules: only 200 is an answer, 429 means later."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

from arc_sim.metacontroller.failures import SyncFailure, Throttled
from arc_sim.metacontroller.spec import Hook
from arc_sim.metacontroller.stats import EmulatorStats
from arc_sim.metacontroller.transport import HookTimeout, HookTransport, HookUnreachable
from hooks.clock import Clock

_ERROR_BODY_CHARS = 200


class HookCaller:
    def __init__(self, transport: HookTransport, stats: EmulatorStats, clock: Clock) -> None:
        self.transport = transport
        self.stats = stats
        self.clock = clock
        self._paths: dict[str, str] = {}

    def call(self, hook: Hook, body: bytes) -> bytes:
        """POST `body`; the answer's body, or `SyncFailure` / `Throttled`."""
        path = self._paths.get(hook.url)
        if path is None:
            path = self._paths[hook.url] = urlsplit(hook.url).path or "/"
        self.stats.hook_calls[path] += 1
        try:
            status, headers, payload = self.transport.post(
                hook.url, body, hook.timeout, self._headers(hook)
            )
        except HookTimeout as error:
            raise SyncFailure("timeout", f"{hook.url}: {error}") from error
        except HookUnreachable as error:
            raise SyncFailure("transport", f"{hook.url}: {error}") from error
        if status == 429:
            self.stats.throttled += 1
            raise Throttled(self._retry_after(headers))
        if status != 200:
            text = payload[:_ERROR_BODY_CHARS].decode("utf-8", "replace")
            raise SyncFailure("non_200", f"{hook.url}: HTTP {status}: {text}")
        return payload

    @staticmethod
    def _headers(hook: Hook) -> dict[str, str] | None:
        return {"authorization": hook.authorization} if hook.authorization else None

    def _retry_after(self, headers: Mapping[str, str]) -> float:
        """Seconds, or an HTTP date; a missing or unreadable header means at once."""
        value = headers.get("retry-after", "").strip()
        if not value:
            return 0.0
        if value.isdigit():
            return float(value)
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return 0.0
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max((when - self.clock.now()).total_seconds(), 0.0)
