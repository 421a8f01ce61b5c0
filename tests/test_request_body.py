"""A body sent in chunks, without Content-Length, is refused once it passes the limit: the rest
is never read, so a huge upload does not sit in memory first. Driven at the ASGI boundary,
where the server hands the app one chunk per `receive()`."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.requests import Request

from hooks.app import create_app
from hooks.clock import ManualClock
from hooks.request_body import BodyTooLarge, body_within
from hooks.webhook.endpoint import MAX_WEBHOOK_BYTES
from tests.hook_app import HOOK_TOKEN, hook_settings
from tests.in_memory_github import InMemoryGitHub

CHUNK = 64 * 1024
LIMIT = 1024 * 1024


class ChunkedUpload:
    """An endless upload, counting how many chunks the app asked for."""

    def __init__(self) -> None:
        self.chunks_read = 0

    async def receive(self) -> dict[str, Any]:
        self.chunks_read += 1
        return {"type": "http.request", "body": b" " * CHUNK, "more_body": True}


def post(app: Any, path: str, upload: ChunkedUpload) -> tuple[int, bytes]:
    """POST the upload with no Content-Length; the answer's status and body."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"content-type", b"application/json"),
            (b"transfer-encoding", b"chunked"),
            (b"authorization", f"Bearer {HOOK_TOKEN}".encode()),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
        "app": app,
    }
    answer: dict[str, Any] = {"status": 0, "body": b""}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
        elif message["type"] == "http.response.body":
            answer["body"] += message.get("body", b"")

    asyncio.run(app(scope, upload.receive, send))
    return answer["status"], answer["body"]


@pytest.fixture
def app() -> Any:
    clock = ManualClock()
    settings = hook_settings(
        {"HOOK_MAX_REQUEST_BYTES": LIMIT, "GITHUB_WEBHOOK_SECRET_TOKEN": "webhook-secret"}
    )
    return create_app(settings, github=InMemoryGitHub(clock), clock=clock)


@pytest.mark.parametrize("path", ["/sync/runner", "/finalize/runner", "/customize/runnerset"])
def test_a_hook_reads_a_chunked_body_only_up_to_its_limit(app: Any, path: str) -> None:
    upload = ChunkedUpload()

    status, body = post(app, path, upload)

    assert status == 413
    error = orjson.loads(body)["error"]
    assert f"more than {LIMIT} bytes" in error and "HOOK_MAX_REQUEST_BYTES" in error
    assert upload.chunks_read == LIMIT // CHUNK + 1  # the chunk that passed the limit, no more


def test_the_webhook_reads_a_chunked_body_only_up_to_its_limit(app: Any) -> None:
    upload = ChunkedUpload()

    status, body = post(app, "/webhook/github", upload)

    assert status == 413 and body == b"payload too large"
    assert upload.chunks_read == MAX_WEBHOOK_BYTES // CHUNK + 1


@given(
    chunks=st.lists(st.binary(max_size=40), max_size=8),
    limit=st.integers(0, 200),
    declare=st.booleans(),
)
def test_a_body_within_its_limit_is_read_whole_and_any_other_refused(
    chunks: list[bytes], limit: int, declare: bool
) -> None:
    body = b"".join(chunks)
    pending = [*chunks]
    headers = [(b"content-length", str(len(body)).encode())] if declare else []

    async def receive() -> dict[str, Any]:
        chunk = pending.pop(0) if pending else b""
        return {"type": "http.request", "body": chunk, "more_body": bool(pending)}

    request = Request({"type": "http", "method": "POST", "headers": headers}, receive)

    async def read() -> bytes:
        return await body_within(request, limit)

    if len(body) <= limit:
        assert asyncio.run(read()) == body
    else:
        with pytest.raises(BodyTooLarge) as refused:
            asyncio.run(read())
        assert refused.value.declared == declare
        assert refused.value.size == (len(body) if declare else limit + 1)
