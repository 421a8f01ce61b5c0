"""Call an ASGI app in-process, without an HTTP client, to time the server side alone.

Hook calls carry the Bearer token, as Metacontroller's do: the check is part of every call."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

BENCH_HOOK_TOKEN = "bench-hook-token"
BENCH_SETTINGS = {"GITHUB_TOKEN": "bench", "HOOK_BEARER_TOKEN": BENCH_HOOK_TOKEN}
"""Settings of a server the benchmarks may call."""

NO_CLUSTER_WARNINGS = frozenset({"fresh parent read failed"})
"""What the hooks log because the benchmarks' apps have no Kubernetes API: a hook's read of its
parent anew fails at once and the parent sent is decided on (bench/README.md), on every call."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[
    [Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]],
    Awaitable[None],
]


async def call(app: ASGIApp, method: str, path: str, body: bytes = b"") -> tuple[int, float]:
    """One request; returns the status and the seconds the app took."""
    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"content-type", b"application/json"),
            (b"authorization", f"Bearer {BENCH_HOOK_TOKEN}".encode()),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    sent = False
    status = 0

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    started = time.perf_counter()
    await app(scope, receive, send)
    return status, time.perf_counter() - started


def median_seconds(app: ASGIApp, method: str, path: str, body: bytes, rounds: int) -> float:
    async def run() -> list[float]:
        times = []
        for _ in range(rounds):
            status, seconds = await call(app, method, path, body)
            assert status == 200, f"{method} {path} answered {status}"
            times.append(seconds)
        return times

    times = sorted(asyncio.run(run()))
    return times[len(times) // 2]


class _NoClusterWarnings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg not in NO_CLUSTER_WARNINGS


_NO_CLUSTER_WARNINGS = _NoClusterWarnings()


def expect_no_cluster() -> None:
    """Leave out the hooks' log lines that only say there is no cluster (`NO_CLUSTER_WARNINGS`),
    so that a benchmark prints its figures alone; every other line of the hooks is kept."""
    logging.getLogger("arc_hooks.hooks").addFilter(_NO_CLUSTER_WARNINGS)
