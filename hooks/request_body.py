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


class BudgetSpent(Exception):
    """The bodies being read at once hold the whole budget: this one is not read."""


class ByteBudget:
    """How many bytes the bodies being read at once may hold together. A limit per body bounds
    one upload, not a thousand at once: on the public webhook path, ten unsigned uploads of
    25 MiB each took a server past its container's 256 MiB. The server runs one event loop,
    so taking and giving back need no lock."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.held = 0

    def take(self, size: int) -> None:
        if self.held + size > self.total:
            raise BudgetSpent()
        self.held += size

    def give_back(self, size: int) -> None:
        self.held -= size


async def body_within(request: Request, limit: int, budget: ByteBudget | None = None) -> bytes:
    """The body; `BodyTooLarge` before anything is read when Content-Length says it is over
    `limit` bytes, else as soon as the chunks read so far are. With a `budget`, the chunks are
    taken from it while they are read (`BudgetSpent` when it is spent), and given back once
    the body is whole."""
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(int(declared), declared=True)
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            if size + len(chunk) > limit:
                raise BodyTooLarge(limit + 1, declared=False)
            if budget is not None:
                budget.take(len(chunk))
            size += len(chunk)
            chunks.append(chunk)
    finally:
        if budget is not None:
            budget.give_back(size)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
