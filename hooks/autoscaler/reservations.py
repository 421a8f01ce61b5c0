"""Capacity reservations: replicas added for a while, one reservation per queued workflow job.

A reservation counts while its expiry is after now; one expiring exactly now no longer counts
(ARC's `ExpirationTime.After(now)`). Its lifetime is `expirationTime - effectiveTime`.

Waiting reservations (ARC #2254 and #2502). When more jobs are queued than `maxReplicas` allows,
the reservations beyond `maxReplicas` wait: their jobs cannot start until an earlier job ends.
Were their lifetime to run while they wait, a burst longer than the lifetime would let them
expire before their jobs ever got a runner, and the HRA would shrink while jobs are still
queued. So the lifetime of a reservation runs from `started_at`, not from its effective time:

- reservations are taken in arrival order (effective time, then name); those whose cumulative
  replicas fit within `maxReplicas` are *in place*, the others *wait*;
- a reservation with a `started_at` expires at `started_at + lifetime`, wherever it stands;
- one without a `started_at` has not started: while it waits, it counts and never expires; the
  first time it is in place, with a runner free for it (the busy runners, whose jobs may have
  outlived their own reservations, and the reservations started before, whose runners may not
  be busy yet, take at least the larger of their two counts), its lifetime starts now, and it is
  reported in `started` so that the caller records `started_at = now` (a transition, written
  once). So a lifetime shorter than the jobs does not let waiting reservations expire, one
  batch after another, while every runner is still busy with the first jobs.

Reservations whose lifetime began when they were made (ARC's `spec.capacityReservations`, or
objects whose creator saw room for them) carry `started_at = effective_time` from the start.

A job's reservation lasts while its job runs (`renewable`, `renewed`). When its lifetime ends
while more runners are busy than the warm ones (`minReplicas`) and the reservations still
counting account for, a busy runner is taken to hold its job, and it starts a new lifetime now
(`renewed_at`; only for an HRA without metrics, whose metric counts running jobs). One whose
job no runner has taken yet (no `in_progress` delivery seen: `job_started`) is renewed while no
runner sits idle, whatever the busy counts say: it was started for a runner that was not free
after all (a runner turning over, a busy count lagging), and its job still waits (found by a
failure scenario: two bursts of twenty-minute jobs, and the newest job waited for good); an
idle runner would take a queued job at once, so with one idle it expires (found in review:
a job whose deliveries were lost otherwise held its runner for good). ARC lets
it expire: the set then removes that busy runner once its job ends and counts it meanwhile
against the replicas the other reservations ask for, so jobs queued behind long ones got no
runner, their own reservations expired in turn, and some never ran (found by a failure
scenario: ten 20-minute jobs, ARC's default 10-minute reservations, `maxReplicas: 5`). It
costs no call: once the jobs end (their `completed` deliveries, or busy runners fewer than
the reservations), they expire as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from hooks.autoscaler.errors import AutoscalingError
from hooks.clock import parse_time
from hooks.resources.autoscaler import CapacityReservation


@dataclass(frozen=True)
class Reservation:
    """`started_at` has no default on purpose: None means "not started, restart its lifetime at
    every sync until told otherwise", so a caller that cannot record `started` must pass the
    effective time (ARC's behaviour before #2254) or its reservations would never expire."""

    name: str
    effective_time: datetime
    expiration_time: datetime
    started_at: datetime | None  # None: beyond maxReplicas since it was made, not started yet
    replicas: int = 1
    renewable: bool = False  # a job's (webhook) reservation: see `count_reservations`
    renewed_at: datetime | None = None  # its lifetime last began anew then
    job_started: bool = True  # a runner took its job (its `in_progress` delivery was seen)

    @property
    def lifetime(self) -> timedelta:
        return self.expiration_time - self.effective_time

    def expires_at(self, now: datetime) -> datetime:
        """When it stops counting; a reservation that has not started starts now. A renewal
        recorded ahead of now (a hook replica's clock running ahead, a hand's edit) is not
        believed: it would keep the reservation for as long as it is ahead."""
        renewed = (
            self.renewed_at if self.renewed_at is not None and self.renewed_at <= now else None
        )
        return (renewed or self.started_at or now) + self.lifetime


@dataclass(frozen=True)
class ReservationCount:
    reserved: int  # replicas of the reservations that count (in place or waiting)
    expired: tuple[str, ...]  # no longer count: to be removed
    waiting: tuple[str, ...]  # beyond maxReplicas and not started
    started: tuple[str, ...]  # their lifetime starts now: record `started_at = now`
    next_expiry: datetime | None  # the first moment one of the counted ones expires
    renewed: tuple[str, ...] = ()  # ended now, busy runners hold their jobs: renewed now


def count_reservations(
    reservations: Sequence[Reservation],
    max_replicas: int | None,
    now: datetime,
    *,
    busy_runners: int = 0,
    renew_beyond: int | None = None,
    idle_runners: int = 0,
) -> ReservationCount:
    """`renew_beyond`: renew the reservations of jobs that outlive them, counting the busy
    runners beyond this many as theirs (None: renew none). `idle_runners`: registered runners
    not busy; while there are some, a job still queued would be taken at once."""
    reserved = 0
    placed = 0  # replicas of the earlier reservations, counted or not yet started
    # The runners taken: each busy runner, and each reservation started before this sync
    # (its job runs on one of the busy runners, or waits for a runner of its own: which,
    # is not known, so at least the larger of the two), and those started by this sync.
    held = sum(
        r.replicas for r in reservations if r.started_at is not None and r.expires_at(now) > now
    )
    taken = max(held, busy_runners)
    # Busy runners beyond the warm ones no reservation still counting accounts for: the jobs
    # of reservations that ended, still running. Found in review: counting the warm runners
    # too, six 60-minute jobs taken by six warm runners kept six more runners idle for the
    # hour, and a reservation whose `completed` was lost was renewed for as long.
    unaccounted = 0 if renew_beyond is None else busy_runners - renew_beyond - held
    expired: list[str] = []
    waiting: list[str] = []
    started: list[str] = []
    renewed: list[str] = []
    expiries: list[datetime] = []
    for reservation in sorted(reservations, key=lambda r: (r.effective_time, r.name)):
        in_place = max_replicas is None or placed + reservation.replicas <= max_replicas
        if reservation.started_at is None and in_place and max_replicas is not None:
            # Starting also needs a runner free for it: an earlier reservation that expired
            # while its job still runs leaves room under the maximum, not a runner (found by a
            # failure scenario: with four of five runners busy, five waiting reservations all
            # started, and four expired before a runner was free for them).
            in_place = taken + reservation.replicas <= max_replicas
            if in_place:
                taken += reservation.replicas
        if reservation.started_at is None and not in_place:
            waiting.append(reservation.name)
        else:
            expires_at = reservation.expires_at(now)
            renew = renew_beyond is not None and reservation.renewable
            if expires_at <= now and renew and reservation.replicas > 0:
                # No runner took its job yet, and none sits idle that would: it is still queued
                # (or its `in_progress` was lost: its `completed` settles it, and once a runner
                # idles it expires). Else a busy runner no one accounts for holds its job.
                queued = not reservation.job_started and idle_runners <= 0
                if queued or reservation.replicas <= unaccounted:
                    unaccounted -= reservation.replicas
                    renewed.append(reservation.name)
                    expires_at = now + reservation.lifetime
            if expires_at <= now:
                expired.append(reservation.name)
                continue
            expiries.append(expires_at)
            if reservation.started_at is None:
                started.append(reservation.name)
        reserved += reservation.replicas
        placed += reservation.replicas
    return ReservationCount(
        reserved=reserved,
        expired=tuple(expired),
        waiting=tuple(waiting),
        started=tuple(started),
        next_expiry=min(expiries, default=None),
        renewed=tuple(renewed),
    )


def reservations_from_spec(spec_reservations: Sequence[CapacityReservation]) -> list[Reservation]:
    """ARC's `spec.capacityReservations`: lifetimes started when made. One without an expiration
    time never counts (ARC compares Go's zero time), so it is left out."""
    reservations = []
    for index, given in enumerate(spec_reservations):
        if not given.expiration_time:
            continue
        expiration = _parse(given.expiration_time, index, "expirationTime")
        effective = (
            _parse(given.effective_time, index, "effectiveTime")
            if given.effective_time
            else expiration
        )
        reservations.append(
            Reservation(
                # Never a valid object name, so it cannot be mistaken for a reservation object.
                name=f"spec.capacityReservations[{index}]"
                + (f" ({given.name})" if given.name else ""),
                effective_time=effective,
                expiration_time=expiration,
                replicas=given.replicas or 0,
                started_at=effective,
            )
        )
    return reservations


def _parse(text: str, index: int, field: str) -> datetime:
    try:
        return parse_time(text)
    except ValueError as error:
        raise AutoscalingError(
            f"spec.capacityReservations[{index}].{field} is not an RFC 3339 time"
        ) from error
