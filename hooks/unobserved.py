"""Runners a set asked for that its children do not show yet.

Metacontroller reads children from an informer cache that lags the API server, usually by
milliseconds, at times by seconds. A sync on that stale view sees fewer runners than the set
has and would ask for the same capacity again: more runners than `replicas` (or an HRA's
`maxReplicas`), and, for a RunnerSet, two runners given one volume slot. So a set records in its
status the runners it asked for, and counts each as present until it is seen or a grace period
ends (then it is taken as never created, and asked for anew). Kubernetes' own ReplicaSet
controller keeps the same record in memory ("expectations"); a stateless hook keeps it in the
status Metacontroller writes back.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime, timedelta

from hooks.clock import format_time, parse_optional_time
from hooks.resources.common import CreatedRunner

UNOBSERVED_GRACE = timedelta(seconds=60)
"""How long a runner asked for but not seen counts as on its way."""


def still_unobserved(
    recorded: Iterable[CreatedRunner] | None, observed: Collection[str], now: datetime
) -> list[CreatedRunner]:
    """The recorded runners not among the `observed` names, asked for within the grace."""
    unobserved = []
    for runner in recorded or ():
        requested = parse_optional_time(runner.requested_at)
        if runner.name in observed or requested is None or requested > now:
            continue
        if now - requested < UNOBSERVED_GRACE:
            unobserved.append(runner)
    return unobserved


def asked_for(name: str, now: datetime, slot: int | None = None) -> CreatedRunner:
    return CreatedRunner(name=name, requested_at=format_time(now), slot=slot)


def grace_left(runners: Iterable[CreatedRunner], now: datetime) -> float | None:
    """Seconds until the oldest of `runners` is no longer counted (None: there are none)."""
    times = [parse_optional_time(runner.requested_at) for runner in runners]
    known = [time for time in times if time is not None]
    if not known:
        return None
    return max((min(known) + UNOBSERVED_GRACE - now).total_seconds(), 1.0)
