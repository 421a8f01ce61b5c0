"""What the emulator counts for the run summary."""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from datetime import datetime

RECENT_SYNC_ERRORS = 1000


@dataclass(frozen=True)
class SyncErrorEvent:
    """The Warning event `SyncError` Metacontroller records on the parent."""

    time: datetime
    controller: str
    parent: str
    kind: str
    message: str


@dataclass
class EmulatorStats:
    hook_calls: Counter[str] = field(default_factory=Counter)
    """By URL path, every attempt (failed ones too)."""
    errors: Counter[str] = field(default_factory=Counter)
    """Failed syncs by kind: transport, timeout, non_200, decode, invalid, apply."""
    throttled: int = 0
    """Hook answers with 429 (requeued after Retry-After; not errors)."""
    syncs: Counter[str] = field(default_factory=Counter)
    """Syncs started, by controller name."""
    recent_errors: deque[SyncErrorEvent] = field(
        default_factory=lambda: deque(maxlen=RECENT_SYNC_ERRORS)
    )

    def summary(self) -> dict[str, object]:
        return {
            "hookCalls": sum(self.hook_calls.values()),
            "hookCallsByPath": dict(sorted(self.hook_calls.items())),
            "errors": sum(self.errors.values()),
            "errorsByKind": dict(sorted(self.errors.items())),
            "throttled": self.throttled,
            "syncs": dict(sorted(self.syncs.items())),
        }
