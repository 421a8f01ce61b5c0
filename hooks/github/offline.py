"""Answering from memory first: a hook call that GitHub's cached answers suffice for needs no
worker thread.

A blocking handler (one that may call GitHub, whose client is synchronous) first runs on the
event loop inside `offline()`. Every place that would leave the process for GitHub, or wait for
another thread's call, raises `WouldBlock` instead; the handler is then run again from the start
in a worker thread. Decisions are pure functions of their facts and GitHub's answers, so the
first attempt leaves nothing behind but memo entries, which only spare work.

Most syncs of a running runner read only the cached runner list: they are answered without a
thread hop, which costs more than the rest of such a call.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_OFFLINE: ContextVar[bool] = ContextVar("github_offline", default=False)


class WouldBlock(BaseException):
    """A GitHub call was needed while offline. A BaseException, so that no decision's
    `except GitHubError` (or `except Exception`) can take it for GitHub's answer."""


@contextmanager
def offline() -> Iterator[None]:
    """Within this block (in this context only), GitHub may not be called."""
    token = _OFFLINE.set(True)
    try:
        yield
    finally:
        _OFFLINE.reset(token)


def refuse_if_offline(what: str) -> None:
    """Called before any GitHub request, or any wait for one."""
    if _OFFLINE.get():
        raise WouldBlock(what)
