"""A request's body, read only while it stays within a limit.

Starlette's `Request.body()` gathers the whole body before anyone can look at its size. A body
sent in chunks (no Content-Length) of hundreds of megabytes would then sit in memory before
being refused, on the webhook path, which needs no authentication to be sent to.
"""

from __future__ import annotations

from starlette.requests import Request


class BodyTooLarge(Exception):
    """The body is over the limit: `size` bytes as declared, or at least `size` as read."""

    def __init__(self, size: int, *, declared: bool) -> None:
        super().__init__(size)
        self.size = size
        self.declared = declared

    def described(self) -> str:
        return f"{self.size} bytes" if self.declared else f"more than {self.size - 1} bytes"


async def body_within(request: Request, limit: int) -> bytes:
    """The body; `BodyTooLarge` before anything is read when Content-Length says it is over
    `limit` bytes, else as soon as the chunks read so far are."""
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(int(declared), declared=True)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(limit + 1, declared=False)
        chunks.append(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
