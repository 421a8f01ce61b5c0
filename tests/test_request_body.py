"""A body sent in chunks, without Content-Length, is refused once it passes the limit: the rest
is never read, so a huge upload does not sit in memory first. Driven at the ASGI boundary,
where the server hands the app one chunk per `receive()`."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.requests import Request

from hooks.app import create_app
from hooks.clock import ManualClock
from hooks.request_body import BodyTooLarge, body_within
from hooks.webhook import endpoint as webhook_endpoint
from hooks.webhook.endpoint import MAX_WEBHOOK_BYTES, TOO_SLOW, WEBHOOK_BODIES_BUDGET
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


SIGNED_JOB = [(b"x-github-event", b"workflow_job"), (b"x-hub-signature-256", b"sha256=00")]
"""A delivery's headers: its body is needed to check the signature."""


def post(
    app: Any, path: str, upload: Any, headers: list[tuple[bytes, bytes]] | None = None
) -> tuple[int, bytes]:
    """POST the upload with no Content-Length; the answer's status and body."""
    return asyncio.run(post_async(app, path, upload, headers))


async def post_async(
    app: Any, path: str, upload: Any, headers: list[tuple[bytes, bytes]] | None = None
) -> tuple[int, bytes]:
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
            *(headers or []),
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

    await app(scope, upload.receive, send)
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


class HalfUpload:
    """A caller that sends part of its body, then goes away."""

    def __init__(self) -> None:
        self.sent = False

    async def receive(self) -> dict[str, Any]:
        if self.sent:
            return {"type": "http.disconnect"}
        self.sent = True
        return {"type": "http.request", "body": b'{"parent":', "more_body": True}


@pytest.mark.parametrize(
    ("path", "headers"), [("/sync/runner", []), ("/webhook/github", SIGNED_JOB)]
)
def test_a_caller_gone_mid_body_is_a_refusal_not_a_failure(
    app: Any, path: str, headers: list[tuple[bytes, bytes]], caplog: pytest.LogCaptureFixture
) -> None:
    """Found by the hostile fuzzer: anyone could trip failed-delivery alerts and fill the logs
    with tracebacks by hanging up mid-upload (a 500, logged at ERROR, counted as failed)."""
    caplog.set_level(logging.INFO)

    status, _ = post(app, path, HalfUpload(), headers)

    assert status == 400
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    failures = [r for r in caplog.records if getattr(r, "outcome", None) in ("failed", "error")]
    assert failures == []


def test_the_webhook_reads_a_chunked_body_only_up_to_its_limit(app: Any) -> None:
    upload = ChunkedUpload()

    status, body = post(app, "/webhook/github", upload, SIGNED_JOB)

    assert status == 413 and body == b"payload too large"
    assert upload.chunks_read == MAX_WEBHOOK_BYTES // CHUNK + 1


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ([(b"x-github-event", b"workflow_job")], 401),  # no signature to check it against
        ([(b"x-github-event", b"push"), (b"x-hub-signature-256", b"sha256=00")], 202),
        ([(b"x-hub-signature-256", b"sha256=00")], 202),  # no event named
    ],
    ids=["unsigned", "event-not-handled", "no-event"],
)
def test_the_webhook_answers_from_the_headers_without_reading_what_it_cannot_use(
    app: Any, headers: list[tuple[bytes, bytes]], status: int
) -> None:
    upload = ChunkedUpload()

    answered, _ = post(app, "/webhook/github", upload, headers)

    assert answered == status
    assert upload.chunks_read == 0


class HeldUpload:
    """An upload that sends all but its last chunk, then waits for `release`."""

    def __init__(self, release: asyncio.Event) -> None:
        self.release = release
        self.sent = 0

    waiting = False

    async def receive(self) -> dict[str, Any]:
        if self.sent + CHUNK < MAX_WEBHOOK_BYTES:
            self.sent += CHUNK
            return {"type": "http.request", "body": b" " * CHUNK, "more_body": True}
        self.waiting = True
        await self.release.wait()
        return {"type": "http.request", "body": b"", "more_body": False}


def test_a_body_that_does_not_arrive_in_time_is_given_up(
    app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upload held open kept its share of the budget until the 8 s deadline: 33 stalled
    uploads blocked every delivery. GitHub sends a body at once; the read now has its own
    deadline (0 here: given up at the first wait, with no wall-clock wait in the test)."""
    monkeypatch.setattr(webhook_endpoint, "WEBHOOK_BODY_SECONDS", 0.0)
    upload = HeldUpload(asyncio.Event())

    status, body = post(app, "/webhook/github", upload, SIGNED_JOB)

    assert (status, body) == (TOO_SLOW.status, TOO_SLOW.message.encode())
    assert post(app, "/webhook/github", ChunkedUpload(), SIGNED_JOB)[0] == 413  # budget back


def test_uploads_held_at_once_share_a_budget_and_the_rest_are_refused_unread(
    app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten unsigned uploads of 25 MiB each had taken the receiver past its container's
    256 MiB; a signature header costs an attacker nothing, so the bodies read at once share
    one budget, and one beyond it gets 503 as soon as its chunks would pass it."""
    monkeypatch.setattr(webhook_endpoint, "WEBHOOK_BODY_SECONDS", 3600.0)  # however slow the VM
    held_each = (MAX_WEBHOOK_BYTES - 1) // CHUNK * CHUNK
    fitting = WEBHOOK_BODIES_BUDGET // held_each

    async def run() -> tuple[list[tuple[int, bytes]], tuple[int, bytes], ChunkedUpload]:
        release = asyncio.Event()
        uploads = [HeldUpload(release) for _ in range(fitting)]
        held = [
            asyncio.create_task(post_async(app, "/webhook/github", upload, SIGNED_JOB))
            for upload in uploads
        ]
        while not all(upload.waiting for upload in uploads):
            await asyncio.sleep(0)  # lets each held upload send what it sends before waiting
        extra = ChunkedUpload()
        refused = await post_async(app, "/webhook/github", extra, SIGNED_JOB)
        release.set()
        return list(await asyncio.gather(*held)), refused, extra

    answers, refused, extra = asyncio.run(run())

    assert refused == (503, b"too many deliveries being read at once")
    left = WEBHOOK_BODIES_BUDGET - fitting * held_each
    assert extra.chunks_read == left // CHUNK + 1  # what was left of the budget, and one more
    assert {status for status, _ in answers} == {401}  # read whole, then the signature checked
    # The budget is whole again once they are answered.
    assert post(app, "/webhook/github", ChunkedUpload(), SIGNED_JOB)[0] == 413


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
