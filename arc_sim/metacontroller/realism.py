"""How unfriendly the emulator's world is: worker concurrency, hook call latency and the hook
timeout, informer lag, and write conflicts. Each knob follows what Metacontroller v4.17 does on
a real cluster; `Realism.friendly()` turns them all off (calls take no time, the cache never
lags, writes never conflict), as the emulator behaved before.

Every draw comes from a `random.Random` seeded by the scenario, so a run is repeatable as long
as the hook calls do not overlap in threads (see `Concurrency`).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from typing import Literal

Concurrency = Literal["threads", "interleaved", "serial"]
"""How hook calls due at the same virtual instant reach the hook server:

- `threads`: concurrently, as production serves them: one event loop per replica, handlers that
  call GitHub on worker threads, so races in the product can really happen. The order in which
  overlapping calls touch shared state depends on thread scheduling: not repeatable.
- `interleaved`: concurrently on one event loop, handlers inline: calls overlap only at their
  awaits. Repeatable.
- `serial`: one after another. Repeatable.
"""


@dataclass(frozen=True)
class Delay:
    """A delay distribution: log-normal around `median` (`spread` is its sigma), and with
    probability `tail_rate` a heavy-tail delay drawn uniformly from `tail`; at most `maximum`."""

    median: float = 0.0
    spread: float = 0.0
    tail_rate: float = 0.0
    tail: tuple[float, float] = (0.0, 0.0)
    maximum: float = math.inf

    @property
    def never(self) -> bool:
        return self.median <= 0 and (self.tail_rate <= 0 or self.tail[1] <= 0)

    def draw(self, rng: random.Random) -> float:
        if self.never:
            return 0.0
        if self.tail_rate > 0 and rng.random() < self.tail_rate:
            value = rng.uniform(*self.tail)
        elif self.median > 0:
            value = (
                self.median * math.exp(rng.gauss(0.0, self.spread)) if self.spread else self.median
            )
        else:
            value = 0.0
        return min(max(value, 0.0), self.maximum)


NO_DELAY = Delay()

DEFAULT_HOOK_OVERHEAD = Delay(
    median=0.005, spread=0.6, tail_rate=0.001, tail=(0.5, 2.0), maximum=2.0
)
"""The hook server's own time per call besides its GitHub round trips: a few ms, rarely
(GC pause, CPU throttling) up to 2 s."""

DEFAULT_INFORMER_LAG = Delay(median=0.03, spread=0.8, tail_rate=0.005, tail=(0.5, 3.0), maximum=3.0)
"""Watch event -> informer cache: tens of ms, heavy tail to seconds (API server or controller
under load, a watch re-established)."""

DEFAULT_PAYLOAD_SECONDS_PER_MEGABYTE = 0.02
"""What a call's JSON costs besides the overhead, per MB of request and answer together:
Metacontroller encodes the request and decodes the answer (Go's encoding/json), the hook decodes
the request and encodes its answer. About 50 MB/s end to end: the hook alone reads and answers a
RunnerReplicaSet's 2.1 MB request with 1,000 Runners in about 16 ms on 2 cores (130 MB/s). The
drawn overhead alone would let a RunnerReplicaSet of 3,000 Runners (6 MB) be synced a hundred
times a virtual second, which no Metacontroller does."""

DEFAULT_CLIENT_QPS = 100.0
DEFAULT_CLIENT_BURST = 200
"""Metacontroller's API client rate limit as the README's install sets it (`--client-go-qps=100
--client-go-burst=200`). Metacontroller's own default is 5 and 10."""

DEFAULT_HOOK_TIMEOUT_SECONDS = 10.0
"""Metacontroller's default webhook timeout (pkg/hooks/webhook.go, webhookTimeout)."""


@dataclass(frozen=True)
class Realism:
    workers: int = 5
    """Metacontroller's --workers: concurrent syncs per controller (pkg/cmd/metacontroller)."""
    concurrency: Concurrency = "interleaved"
    hook_overhead: Delay = DEFAULT_HOOK_OVERHEAD
    """Each hook call's virtual latency: this draw, plus `github_call_seconds` for every GitHub
    API call the hook server made while answering, plus `wall_scale` times the wall time the
    call took (0: the wall clock is not looked at)."""
    github_call_seconds: float = 0.05
    payload_seconds_per_megabyte: float = DEFAULT_PAYLOAD_SECONDS_PER_MEGABYTE
    """Added per MB of request and answer: a large parent's sync takes longer, as it does."""
    wall_scale: float = 0.0
    enforce_timeout: bool = True
    """A call whose latency exceeds the hook's timeout fails as a timeout after that timeout
    (the server's side effects stay done), on every transport."""
    informer_lag: Delay = DEFAULT_INFORMER_LAG
    """Per watch (object kind): delay from a store change to the emulator's cache and event
    handlers; events of one kind stay in order."""
    conflict_rate: float = 0.01
    """Share of the decorator's parent updates (labels, annotations, finalizer removal) and of
    every status update that meet a 409 Conflict, as if another writer had just changed the
    object."""
    client_qps: float = DEFAULT_CLIENT_QPS
    """Metacontroller's `--client-go-qps`: API requests a second for all its controllers
    together (`client_limit`); 0: no limit."""
    client_burst: int = DEFAULT_CLIENT_BURST
    """Metacontroller's `--client-go-burst`."""
    replica_restart_rate: float = 0.0
    """Share of hook calls during which the replica that serves them restarts: the call's side
    effects are done, its answer is lost (connection reset) and the replica's memory is gone."""
    seed: int = 1

    @staticmethod
    def friendly(*, workers: int = 5, seed: int = 1) -> Realism:
        """No latency, no lag, no conflicts, calls one at a time: the old emulator."""
        return Realism(
            workers=workers,
            concurrency="serial",
            hook_overhead=NO_DELAY,
            github_call_seconds=0.0,
            payload_seconds_per_megabyte=0.0,
            wall_scale=0.0,
            enforce_timeout=True,
            informer_lag=NO_DELAY,
            conflict_rate=0.0,
            client_qps=0.0,
            replica_restart_rate=0.0,
            seed=seed,
        )

    def stressed(self) -> Realism:
        """`simulate --stress`: lag of seconds, 10% write conflicts, replicas restarting."""
        return replace(
            self,
            informer_lag=STRESS_INFORMER_LAG,
            conflict_rate=STRESS_CONFLICT_RATE,
            replica_restart_rate=STRESS_REPLICA_RESTART_RATE,
        )

    @property
    def takes_time(self) -> bool:
        return (
            not self.hook_overhead.never
            or self.github_call_seconds > 0
            or self.payload_seconds_per_megabyte > 0
            or self.wall_scale > 0
        )


STRESS_INFORMER_LAG = Delay(median=0.5, spread=1.0, tail_rate=0.05, tail=(2.0, 8.0), maximum=8.0)
STRESS_CONFLICT_RATE = 0.10
STRESS_REPLICA_RESTART_RATE = 0.002


@dataclass
class Rngs:
    """One stream per knob, so turning one knob does not change the draws of another."""

    seed: int
    latency: random.Random = field(init=False)
    lag: random.Random = field(init=False)
    conflicts: random.Random = field(init=False)
    restarts: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.latency = random.Random(f"{self.seed}:latency")
        self.lag = random.Random(f"{self.seed}:lag")
        self.conflicts = random.Random(f"{self.seed}:conflicts")
        self.restarts = random.Random(f"{self.seed}:restarts")
