"""Metacontroller's API client rate limit: client-go's token bucket
(`flowcontrol.NewTokenBucketRateLimiter`, built from `--client-go-qps` and `--client-go-burst`
in `pkg/cmd/metacontroller/main.go`). One bucket serves every request of every controller the
process runs; a request with no token left waits for one. Here each request the controllers
make through the store takes a token (`conflicts.ConflictingStore`), and a sync whose request
must wait is paused for that long in virtual time (`context.SyncRunner`).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ClientRateLimit:
    """`qps` tokens a second, at most `burst` saved; `qps` 0: no limit."""

    qps: float
    burst: int
    _tokens: float = field(init=False, default=0.0)
    _at: float | None = field(init=False, default=None)

    def reserve(self, now: float) -> float:
        """Take a token at `now` (seconds); how long the request waits for it (0: at once).
        Like `rate.Limiter.Reserve`, a token is owed when none is left: later requests wait
        behind it."""
        if self.qps <= 0:
            return 0.0
        burst = max(self.burst, 1)
        tokens = burst if self._at is None else self._tokens + (now - self._at) * self.qps
        tokens = min(float(burst), tokens) - 1.0
        self._tokens, self._at = tokens, now
        return 0.0 if tokens >= 0 else -tokens / self.qps
