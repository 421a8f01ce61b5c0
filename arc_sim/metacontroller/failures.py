"""Why a sync did not complete: a failure (retried with backoff) or a 429 (retried later)."""

from __future__ import annotations

from typing import Literal

FailureKind = Literal["transport", "timeout", "non_200", "decode", "invalid", "apply"]
"""transport/timeout/non_200: the hook call; decode: its answer; invalid: a selector, claim,
finalizer or related-rule problem; apply: writing children (after which status is still
written)."""


class SyncFailure(Exception):
    def __init__(self, kind: FailureKind, message: str) -> None:
        super().__init__(message)
        self.kind: FailureKind = kind


class Throttled(Exception):
    """The hook answered 429: requeue after `retry_after` seconds; not an error."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"hook asked to retry after {retry_after:g} s")
        self.retry_after = retry_after
