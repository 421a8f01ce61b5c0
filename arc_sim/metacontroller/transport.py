"""How hook calls reach the hook server: in process through ASGI, or over loopback HTTP.

A transport answers with the HTTP status, headers and body, or raises `HookUnreachable` /
`HookTimeout`. The transport itself takes no virtual time: the caller (`webhook.HookCaller`)
turns what a call cost into latency. What it cost is counted in `CallCost`, which the simulated
world's GitHub port charges through `count_github_call` while the hook server answers.
`post_many` sends several calls at once, so that they overlap in the hook server.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol
from urllib.parse import urlsplit

import httpx
from starlette.types import ASGIApp, Message

from arc_sim.metacontroller import fibers
from hooks.clock import Clock

HookReply = tuple[int, Mapping[str, str], bytes]
"""Status, headers (lower-case names) and body."""


class HookUnreachable(Exception):
    """The connection failed or broke before an answer came."""


class HookTimeout(HookUnreachable):
    """No answer within the hook's timeout."""


class InjectedTimeout(HookTimeout):
    """A replica broken on purpose (a scenario's hookOutage) does not answer: the call takes the
    whole timeout, but it did not exceed it by itself."""


@dataclass
class CallCost:
    """What answering one call took: GitHub API calls made meanwhile, and wall time."""

    github_calls: int = 0
    wall_seconds: float = 0.0


CALL_COST: ContextVar[CallCost | None] = ContextVar("arc_sim_hook_call_cost", default=None)


def count_github_call() -> None:
    """Charge one GitHub API call to the hook call being answered (if any)."""
    cost = CALL_COST.get()
    if cost is not None:
        cost.github_calls += 1


@dataclass(frozen=True)
class HookPost:
    url: str
    body: bytes
    timeout: float
    headers: Mapping[str, str] | None = None


@dataclass
class Exchange:
    """One call's outcome: the reply, or the error instead; and its cost."""

    reply: HookReply | None = None
    error: HookUnreachable | None = None
    cost: CallCost = field(default_factory=CallCost)


def post_measured(transport: HookTransport, call: HookPost) -> Exchange:
    """One call through any transport, with its cost measured."""
    cost = CallCost()
    token = CALL_COST.set(cost)
    started = time.perf_counter()
    try:
        reply = transport.post(call.url, call.body, call.timeout, call.headers)
    except HookUnreachable as error:
        return Exchange(error=error, cost=cost)
    finally:
        cost.wall_seconds = time.perf_counter() - started
        CALL_COST.reset(token)
    return Exchange(reply=reply, cost=cost)


class HookTransport(Protocol):
    def post(
        self, url: str, body: bytes, timeout: float, headers: Mapping[str, str] | None = None
    ) -> HookReply:
        """POST `body` with `headers` besides the content type (e.g. Authorization)."""
        ...


@dataclass(frozen=True)
class ReplicaFault:
    """A replica that misbehaves until `until` (virtual time; None: until healed).

    `error` is "timeout", "unreachable", or an HTTP status the replica answers with instead.
    """

    error: Literal["timeout", "unreachable"] | int = "timeout"
    until: datetime | None = None


_THREAD_LOOPS = threading.local()
"""An event loop per thread that answers calls (threads are pooled, so loops are reused)."""


@dataclass(frozen=True)
class _Route:
    index: int
    app: ASGIApp
    fault: ReplicaFault | None
    restarts: bool


class AsgiTransport:
    """N hook replicas in process, each its own app (so their caches differ, as in production);
    every call goes to one of them, chosen with the seeded `rng`.

    `apps` is kept as given when it is a list (the world shares it). With `restart` (a new app
    for a replica index) and `restart_rate`, a call's replica restarts while answering it, at
    that rate: the call's side effects are done, its answer is lost, the replica's memory too.

    `post_many` overlaps its calls on one event loop, or with `threads` each on a thread (and
    event loop) of its own, so that the hook server's code runs on several threads at once.
    """

    def __init__(
        self,
        apps: Sequence[ASGIApp],
        rng: random.Random,
        *,
        clock: Clock | None = None,
        restart: Callable[[int], ASGIApp] | None = None,
        restart_rate: float = 0.0,
        restart_rng: random.Random | None = None,
        threads: bool = False,
    ) -> None:
        if not apps:
            raise ValueError("at least one hook replica is needed")
        self.apps = apps if isinstance(apps, list) else list(apps)
        self.rng = rng
        self.clock = clock
        self.calls_by_replica = [0] * len(self.apps)
        # When each call to a replica broken on purpose was made, and to which (clock given).
        self.faulted_calls: list[tuple[datetime, int]] = []
        self.restarts = 0
        # Calls whose replica restarted while answering them (several may share a restart).
        self.answers_lost = 0
        self._restart = restart
        self._restart_rate = restart_rate if restart is not None else 0.0
        self._restart_rng = restart_rng or random.Random(0)
        self._threads = threads
        self._faults: dict[int, ReplicaFault] = {}
        # Our own loop: hook calls are made from synchronous code.
        self._loop = asyncio.new_event_loop()

    def break_replica(self, index: int, fault: ReplicaFault | None = None) -> None:
        self._faults[index] = fault or ReplicaFault()

    def heal_replica(self, index: int) -> None:
        self._faults.pop(index, None)

    def post(
        self, url: str, body: bytes, timeout: float, headers: Mapping[str, str] | None = None
    ) -> HookReply:
        route = self._route()
        try:
            return self._loop.run_until_complete(
                _post(route, HookPost(url, body, timeout, headers))
            )
        finally:
            self._restarted([route])

    def post_many(self, calls: Sequence[HookPost]) -> list[Exchange]:
        """Every call at once, overlapping in the replicas; outcomes in the order of `calls`."""
        routes = [self._route() for _ in calls]
        if self._threads and len(calls) > 1:
            exchanges: list[Exchange] = [Exchange() for _ in calls]

            def job(index: int, route: _Route, call: HookPost) -> Callable[[], None]:
                def run() -> None:
                    exchanges[index] = self._on_thread(route, call)

                return run

            fibers.crew([job(i, r, c) for i, (r, c) in enumerate(zip(routes, calls, strict=True))])
        else:

            async def all_of() -> list[Exchange]:
                pairs = zip(routes, calls, strict=True)
                return list(await asyncio.gather(*(_measured(r, c) for r, c in pairs)))

            exchanges = self._loop.run_until_complete(all_of())
        self._restarted(routes)
        return exchanges

    def _on_thread(self, route: _Route, call: HookPost) -> Exchange:
        loop: asyncio.AbstractEventLoop | None = getattr(_THREAD_LOOPS, "loop", None)
        if loop is None:
            loop = _THREAD_LOOPS.loop = asyncio.new_event_loop()
        try:
            return loop.run_until_complete(_measured(route, call))
        except Exception as error:  # the hook server failed: the connection breaks
            return Exchange(error=HookUnreachable(f"the hook server failed: {error!r}"))

    def _route(self) -> _Route:
        """Where a call goes, decided on the caller's thread in call order: the replica, its
        fault if broken, and whether it restarts while answering."""
        index = self.rng.randrange(len(self.apps)) if len(self.apps) > 1 else 0
        restarts = bool(self._restart_rate) and self._restart_rng.random() < self._restart_rate
        self.calls_by_replica[index] += 1
        fault = self._active_fault(index)
        if fault is not None and self.clock is not None:
            self.faulted_calls.append((self.clock.now(), index))
        return _Route(index, self.apps[index], fault, restarts)

    def _restarted(self, routes: Sequence[_Route]) -> None:
        for route in routes:
            restarted_already = self.apps[route.index] is not route.app
            if route.restarts and route.fault is None:
                self.answers_lost += 1
            if route.restarts and route.fault is None and not restarted_already:
                assert self._restart is not None
                self.apps[route.index] = self._restart(route.index)
                self.restarts += 1

    def close(self) -> None:
        self._loop.run_until_complete(self._loop.shutdown_default_executor())
        self._loop.close()

    def _active_fault(self, index: int) -> ReplicaFault | None:
        fault = self._faults.get(index)
        if fault is None:
            return None
        if fault.until is not None and self.clock is not None and self.clock.now() >= fault.until:
            del self._faults[index]
            return None
        return fault


async def _measured(route: _Route, call: HookPost) -> Exchange:
    cost = CallCost()
    CALL_COST.set(cost)  # this task's own context
    started = time.perf_counter()
    try:
        return Exchange(reply=await _post(route, call), cost=cost)
    except HookUnreachable as error:
        return Exchange(error=error, cost=cost)
    finally:
        cost.wall_seconds = time.perf_counter() - started


async def _post(route: _Route, call: HookPost) -> HookReply:
    index, fault = route.index, route.fault
    if fault is not None:
        if fault.error == "timeout":
            raise InjectedTimeout(f"replica {index}: no answer within {call.timeout:g} s")
        if fault.error == "unreachable":
            raise HookUnreachable(f"replica {index}: connection refused")
        return fault.error, {}, b"replica unavailable"
    reply = await _call_asgi(route.app, call.url, call.body, call.headers or {})
    if route.restarts:
        raise HookUnreachable(f"replica {index}: connection reset (the replica restarted)")
    return reply


async def _call_asgi(
    app: ASGIApp, url: str, body: bytes, extra_headers: Mapping[str, str]
) -> HookReply:
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": parts.scheme or "http",
        "path": parts.path or "/",
        "raw_path": (parts.path or "/").encode(),
        "query_string": parts.query.encode(),
        "root_path": "",
        "headers": [
            (b"host", parts.netloc.encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            *((name.lower().encode(), value.encode()) for name, value in extra_headers.items()),
        ],
        "client": ("127.0.0.1", 50000),
        "server": (host, port),
    }
    answered = asyncio.Event()
    request_sent = False
    status: int | None = None
    headers: dict[str, str] = {}
    chunks: list[bytes] = []

    async def receive() -> Message:
        nonlocal request_sent
        if not request_sent:
            request_sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()  # the client stays connected until it has the answer
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
            for name, value in message.get("headers", []):
                headers[name.decode("latin-1").lower()] = value.decode("latin-1")
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                answered.set()

    try:
        await app(scope, receive, send)
    except Exception as error:
        # Starlette answers 500 and then re-raises, as a server would log it.
        if status is None or not answered.is_set():
            raise HookUnreachable(f"the hook server failed: {error!r}") from error
    if status is None:
        raise HookUnreachable("the hook server closed the connection without an answer")
    return status, headers, b"".join(chunks)


class LoopbackTransport:
    """Real HTTP to hook servers on loopback. The webhook's scheme and host are replaced by one
    of `base_urls` (chosen with `rng`, or the first); its path is kept."""

    def __init__(self, base_urls: Sequence[str], rng: random.Random | None = None) -> None:
        if not base_urls:
            raise ValueError("at least one hook server is needed")
        self.base_urls = [url.rstrip("/") for url in base_urls]
        self.rng = rng
        self._client = httpx.Client()
        self._pool: ThreadPoolExecutor | None = None

    def post_many(self, calls: Sequence[HookPost]) -> list[Exchange]:
        """Every call at once, each from a thread of its own (as Metacontroller's workers)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="hook-client")
        return list(self._pool.map(lambda call: post_measured(self, call), calls))

    def post(
        self, url: str, body: bytes, timeout: float, headers: Mapping[str, str] | None = None
    ) -> HookReply:
        base = self.base_urls[0]
        if self.rng is not None and len(self.base_urls) > 1:
            base = self.base_urls[self.rng.randrange(len(self.base_urls))]
        parts = urlsplit(url)
        target = base + (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            response = self._client.post(
                target,
                content=body,
                headers={"content-type": "application/json", **(headers or {})},
                timeout=timeout,
            )
        except httpx.TimeoutException as error:
            raise HookTimeout(f"{target}: {error}") from error
        except httpx.TransportError as error:
            raise HookUnreachable(f"{target}: {error}") from error
        return response.status_code, dict(response.headers), response.content

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
        self._client.close()
