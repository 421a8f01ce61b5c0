"""Port of ARC's `TestPlanBatchScale`
(controllers/actions.summerwind.net/horizontal_runner_autoscaler_batch_scale_test.go, at
2ee6b3b8; actions/actions-runner-controller, Apache-2.0).

ARC's fixture: maxReplicas 1, reservations r0 (t0..t0+10s) and r1 (t1..t1+10s), t1 = t0+3s,
now t2 = t1+3s. `planBatchScale` extends the reservations beyond maxReplicas (r1: t2..t2+10s,
keeping its own 10 s, not the trigger's new duration) and appends one per scale-up.

Here webhook reservations are CapacityReservation objects counted by `count_reservations`:
r0 was in place when made (its lifetime started then: started_at t0), r1 was beyond maxReplicas
(started_at None: it waits). What ARC's table observes and this project shares is asserted:
how many reservations count at t2 and the lifetime a waiting reservation keeps. The rest is a
documented deviation (README "Where arc-hooks differs": a `completed` settles its own job's
reservation, not the oldest; a reservation beyond maxReplicas waits without expiring).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hooks.autoscaler.reservations import Reservation, count_reservations

EXPIRY = timedelta(seconds=10)
INTERVAL = timedelta(seconds=3)
T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = T0 + INTERVAL
T2 = T1 + INTERVAL


def fixture() -> list[Reservation]:
    return [
        Reservation("r0", T0, T0 + EXPIRY, started_at=T0),
        Reservation("r1", T1, T1 + EXPIRY, started_at=None),
    ]


@pytest.mark.parametrize(
    ("amount", "new_expiry", "want"),
    [
        pytest.param(1, EXPIRY, 3, id="scale up"),
        pytest.param(1, EXPIRY + timedelta(seconds=1), 3, id="scale up reuses previous duration"),
        pytest.param(0, EXPIRY, 2, id="extension"),
    ],
)
def test_plan_batch_scale_counts(amount: int, new_expiry: timedelta, want: int) -> None:
    reservations = fixture()
    if amount > 0:
        reservations.append(Reservation("new", T2, T2 + new_expiry, started_at=None))
    counted = count_reservations(reservations, 1, T2)
    assert counted.reserved == want
    assert counted.expired == ()


def test_plan_batch_scale_waiting_reservation_keeps_its_own_lifetime() -> None:
    """ARC: r1 gets `ExpirationTime - EffectiveTime` (10 s) from now, not the trigger's new
    duration. Here r1 starts when in place (r0 expired at t0+10s) and lasts its own 10 s."""
    start = T0 + EXPIRY
    counted = count_reservations(fixture(), 1, start)
    assert counted.expired == ("r0",)
    assert counted.started == ("r1",)
    assert counted.next_expiry == start + EXPIRY
