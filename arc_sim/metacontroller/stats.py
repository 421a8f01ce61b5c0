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
    timeouts_exceeded: int = 0
    """Hook calls slower than their hook's timeout by themselves (not a broken replica's)."""
    injected_timeouts: int = 0
    """Hook calls to a replica broken on purpose to time out (a scenario's hookOutage)."""
    max_hook_latency: float = 0.0
    """The slowest answer, in virtual seconds (timeouts of broken replicas left out)."""
    max_concurrent_calls: int = 0
    """The most hook calls sent together (at one virtual instant)."""
    conflicts: int = 0
    """409 Conflicts the controllers' writes met (injected ones included)."""
    injected_conflicts: int = 0
    """Conflicts made up at the configured rate."""
    events_observed: int = 0
    """Watch events that reached the informer cache."""
    max_informer_lag: float = 0.0
    """The longest a watch event took to reach the cache, in virtual seconds."""
    client_waits: int = 0
    """API requests that waited for Metacontroller's client rate limit."""
    client_wait_seconds: float = 0.0
    """Their waits together, in virtual seconds."""
    hook_wall_seconds: float = 0.0
    """Wall time the hook server spent answering, in real seconds (benchmarks read it; it is
    no part of `summary()`, which a file and seed always give the same)."""

    def summary(self) -> dict[str, object]:
        return {
            "hookCalls": sum(self.hook_calls.values()),
            "hookCallsByPath": dict(sorted(self.hook_calls.items())),
            "errors": sum(self.errors.values()),
            "errorsByKind": dict(sorted(self.errors.items())),
            "throttled": self.throttled,
            "syncs": dict(sorted(self.syncs.items())),
            "timeoutsExceeded": self.timeouts_exceeded,
            "injectedTimeouts": self.injected_timeouts,
            "maxHookLatencySeconds": round(self.max_hook_latency, 3),
            "maxConcurrentCalls": self.max_concurrent_calls,
            "conflicts": self.conflicts,
            "injectedConflicts": self.injected_conflicts,
            "maxInformerLagSeconds": round(self.max_informer_lag, 3),
            "clientRateLimitWaits": self.client_waits,
            "clientRateLimitWaitSeconds": round(self.client_wait_seconds, 3),
        }
