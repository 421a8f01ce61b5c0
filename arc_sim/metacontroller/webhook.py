"""One hook call with Metacontroller's HTTP rules: only 200 is an answer, 429 means later; and
the call's latency in virtual time, with the hook's timeout enforced.

A sync running on a fiber (see `fibers`) suspends at its hook call. The calls made at one
virtual instant are sent together (`post_many`, overlapping in the hook server), and each
answer is handed back to its sync `latency` later, in the order the calls were made. The
latency is drawn from what the call cost (`Realism.hook_overhead`, the GitHub API calls the
server made, the size of its request and answer, optionally its wall time). A call slower than
its hook's timeout fails as Metacontroller's http.Client does (`pkg/hooks/webhook.go`): after
the timeout, with no answer, although the server's side effects are done; the sync is retried
with backoff.

Called from anywhere else (a test, or a world without latency) a call is answered at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime
from functools import partial
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from arc_sim.metacontroller import fibers
from arc_sim.metacontroller.failures import SyncFailure, Throttled
from arc_sim.metacontroller.realism import Realism, Rngs
from arc_sim.metacontroller.spec import Hook
from arc_sim.metacontroller.stats import EmulatorStats
from arc_sim.metacontroller.transport import (
    Exchange,
    HookPost,
    HookTimeout,
    HookTransport,
    HookUnreachable,
    InjectedTimeout,
    post_measured,
)
from hooks.clock import Clock

if TYPE_CHECKING:
    from arc_sim.events import EventLoop

_ERROR_BODY_CHARS = 200


@dataclass
class PendingCall:
    """A call a suspended sync waits on; its runner sets `on_answer` to resume it."""

    hook: Hook
    post: HookPost
    on_answer: Callable[[Exchange], None] | None = None


class HookCaller:
    def __init__(
        self,
        transport: HookTransport,
        stats: EmulatorStats,
        clock: Clock,
        *,
        loop: EventLoop | None = None,
        realism: Realism | None = None,
    ) -> None:
        self.transport = transport
        self.stats = stats
        self.clock = clock
        self.realism = realism or Realism.friendly()
        self._loop = loop
        self._rng = Rngs(self.realism.seed).latency
        self._paths: dict[str, str] = {}
        self._pending: list[PendingCall] = []

    @property
    def waits(self) -> bool:
        """Whether syncs wait for their calls in virtual time (on fibers)."""
        return self._loop is not None and (
            self.realism.takes_time or self.realism.concurrency != "serial"
        )

    def call(self, hook: Hook, body: bytes) -> bytes:
        """POST `body`; the answer's body, or `SyncFailure` / `Throttled`."""
        path = self._paths.get(hook.url)
        if path is None:
            path = self._paths[hook.url] = urlsplit(hook.url).path or "/"
        self.stats.hook_calls[path] += 1
        post = HookPost(hook.url, body, hook.timeout, self._headers(hook))
        fiber = fibers.current()
        if fiber is None or not self.waits:
            exchange = post_measured(self.transport, post)
            latency = self._latency(post, exchange)
            exchange = self._enforce_timeout(hook, exchange, latency)
        else:
            if not self._pending:
                assert self._loop is not None
                self._loop.call_soon(self._flush, "hook calls")
            pending = PendingCall(hook, post)
            self._pending.append(pending)
            exchange = fiber.suspend(pending)
        return self._answer(hook, exchange)

    # --- the loop's side

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        posts = [pending.post for pending in batch]
        post_many = getattr(self.transport, "post_many", None)
        started = time.perf_counter()
        if post_many is not None and len(batch) > 1 and self.realism.concurrency != "serial":
            exchanges: list[Exchange] = post_many(posts)
        else:
            exchanges = [post_measured(self.transport, post) for post in posts]
        self.stats.hook_wall_seconds += time.perf_counter() - started
        self.stats.max_concurrent_calls = max(self.stats.max_concurrent_calls, len(batch))
        assert self._loop is not None
        for pending, exchange in zip(batch, exchanges, strict=True):
            latency = self._latency(pending.post, exchange)
            exchange = self._enforce_timeout(pending.hook, exchange, latency)
            if isinstance(exchange.error, HookTimeout):
                latency = pending.hook.timeout
            assert pending.on_answer is not None
            self._loop.call_later(latency, partial(pending.on_answer, exchange), "hook answer")

    def _latency(self, post: HookPost, exchange: Exchange) -> float:
        realism = self.realism
        latency = realism.hook_overhead.draw(self._rng)
        latency += exchange.cost.github_calls * realism.github_call_seconds
        payload = len(post.body) + (len(exchange.reply[2]) if exchange.reply is not None else 0)
        latency += payload / 1e6 * realism.payload_seconds_per_megabyte
        latency += exchange.cost.wall_seconds * realism.wall_scale
        return latency

    def _enforce_timeout(self, hook: Hook, exchange: Exchange, latency: float) -> Exchange:
        if isinstance(exchange.error, InjectedTimeout):
            self.stats.injected_timeouts += 1
            return exchange
        if isinstance(exchange.error, HookTimeout):  # a real transport's own timeout
            self.stats.timeouts_exceeded += 1
            return exchange
        self.stats.max_hook_latency = max(self.stats.max_hook_latency, latency)
        if self.realism.enforce_timeout and latency > hook.timeout:
            self.stats.timeouts_exceeded += 1
            return Exchange(
                error=HookTimeout(f"no answer within {hook.timeout:g} s (took {latency:.3g} s)"),
                cost=exchange.cost,
            )
        return exchange

    # --- the answer

    def _answer(self, hook: Hook, exchange: Exchange) -> bytes:
        if exchange.error is not None:
            error = exchange.error
            if isinstance(error, HookTimeout):
                raise SyncFailure("timeout", f"{hook.url}: {error}") from error
            raise SyncFailure("transport", f"{hook.url}: {error}") from error
        assert exchange.reply is not None
        status, headers, payload = exchange.reply
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


__all__ = ["HookCaller", "HookUnreachable", "PendingCall"]
