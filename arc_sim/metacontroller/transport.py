"""How hook calls reach the hook server: in process through ASGI, or over loopback HTTP.

Either way a call is synchronous and takes no virtual time. A transport answers with the HTTP
status, headers and body, or raises `HookUnreachable` / `HookTimeout`.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol
from urllib.parse import urlsplit

import httpx
from starlette.types import ASGIApp, Message

from hooks.clock import Clock

HookReply = tuple[int, Mapping[str, str], bytes]
"""Status, headers (lower-case names) and body."""


class HookUnreachable(Exception):
    """The connection failed or broke before an answer came."""


class HookTimeout(HookUnreachable):
    """No answer within the hook's timeout."""


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


class AsgiTransport:
    """N hook replicas in process, each its own app (so their caches differ, as in production);
    every call goes to one of them, chosen with the seeded `rng`."""

    def __init__(
        self, apps: Sequence[ASGIApp], rng: random.Random, *, clock: Clock | None = None
    ) -> None:
        if not apps:
            raise ValueError("at least one hook replica is needed")
        self.apps = list(apps)
        self.rng = rng
        self.clock = clock
        self.calls_by_replica = [0] * len(self.apps)
        self._faults: dict[int, ReplicaFault] = {}
        # Our own loop: hook calls are made from synchronous code, one at a time.
        self._loop = asyncio.new_event_loop()

    def break_replica(self, index: int, fault: ReplicaFault | None = None) -> None:
        self._faults[index] = fault or ReplicaFault()

    def heal_replica(self, index: int) -> None:
        self._faults.pop(index, None)

    def post(
        self, url: str, body: bytes, timeout: float, headers: Mapping[str, str] | None = None
    ) -> HookReply:
        index = self.rng.randrange(len(self.apps)) if len(self.apps) > 1 else 0
        self.calls_by_replica[index] += 1
        fault = self._active_fault(index)
        if fault is not None:
            if fault.error == "timeout":
                raise HookTimeout(f"replica {index}: no answer within {timeout:g} s")
            if fault.error == "unreachable":
                raise HookUnreachable(f"replica {index}: connection refused")
            return fault.error, {}, b"replica unavailable"
        return self._loop.run_until_complete(_call_asgi(self.apps[index], url, body, headers or {}))

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
        self._client.close()
