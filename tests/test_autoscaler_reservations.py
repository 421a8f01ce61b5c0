"""Capacity reservations: expiry at the boundary, spec reservations, and reservations waiting
beyond maxReplicas, whose lifetime starts only once they are in place."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hooks.autoscaler import AutoscalingError, Reservation, count_reservations
from hooks.autoscaler.reservations import reservations_from_spec
from hooks.clock import format_time
from hooks.resources.autoscaler import CapacityReservation

NOW = datetime(2022, 3, 1, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


def made(name: str, minutes_ago: int, lifetime: int = 10, *, started: bool = True) -> Reservation:
    """A one-replica reservation made `minutes_ago`, its lifetime started then or not yet."""
    effective = NOW - minutes_ago * MINUTE
    return Reservation(
        name,
        effective_time=effective,
        expiration_time=effective + lifetime * MINUTE,
        started_at=effective if started else None,
    )


@pytest.mark.parametrize(
    ("reservation", "counts"),
    [
        (made("fresh", 0), True),
        (made("expiring-exactly-now", 10, lifetime=10), False),
        (
            Reservation(
                "just", NOW - 10 * MINUTE, NOW + timedelta(seconds=1), started_at=NOW - 10 * MINUTE
            ),
            True,
        ),
        (made("old", 11), False),
    ],
    ids=["fresh", "expiring-exactly-now", "one-second-left", "expired"],
)
def test_a_reservation_counts_while_its_expiry_is_after_now(
    reservation: Reservation, counts: bool
) -> None:
    count = count_reservations([reservation], None, NOW)

    assert count.reserved == (1 if counts else 0)
    assert count.expired == (() if counts else (reservation.name,))


def test_replicas_add_up_and_the_first_expiry_is_next() -> None:
    big = Reservation("big", NOW, NOW + 30 * MINUTE, replicas=3, started_at=NOW)

    count = count_reservations([big, made("small", 5)], None, NOW)

    assert count.reserved == 4
    assert count.next_expiry == NOW + 5 * MINUTE


def test_reservations_beyond_max_wait_and_never_expire_while_waiting() -> None:
    reservations = [
        made("a", 50, lifetime=60),
        made("b", 40, lifetime=60),
        made("c", 30, lifetime=10, started=False),  # its lifetime would be over long ago
        made("d", 20, lifetime=10, started=False),
    ]

    count = count_reservations(reservations, 2, NOW)

    assert count.reserved == 4
    assert count.waiting == ("c", "d")
    assert count.expired == count.started == ()
    assert count.next_expiry == NOW + 10 * MINUTE  # a


def test_a_waiting_reservation_starts_its_lifetime_once_in_place() -> None:
    # `a` completed (its object is gone): `c` is in place now, `d` still waits.
    reservations = [
        made("b", 40, lifetime=60),
        made("c", 30, lifetime=10, started=False),
        made("d", 20, lifetime=10, started=False),
    ]

    count = count_reservations(reservations, 2, NOW)

    assert count.reserved == 3
    assert count.started == ("c",)
    assert count.waiting == ("d",)
    assert count.next_expiry == NOW + 10 * MINUTE  # c, from now


def test_a_started_reservation_expires_a_lifetime_after_it_started() -> None:
    waited = Reservation("c", NOW - 30 * MINUTE, NOW - 20 * MINUTE, started_at=NOW - 9 * MINUTE)

    assert count_reservations([waited], 2, NOW).next_expiry == NOW + MINUTE
    assert count_reservations([waited], 2, NOW + MINUTE).expired == ("c",)


def test_expired_reservations_leave_their_place_to_waiting_ones() -> None:
    reservations = [made("a", 20, lifetime=10), made("b", 15, lifetime=5, started=False)]

    count = count_reservations(reservations, 1, NOW)

    assert (count.expired, count.started, count.reserved) == (("a",), ("b",), 1)


def test_a_waiting_reservation_starts_only_once_a_runner_is_free() -> None:
    """Found by a hostile probe (duration 5m, twelve-minute jobs, maxReplicas 5): reservations
    that expired while their jobs ran left room under the maximum, the waiting ones started
    and expired in turn with every runner still busy, and ten jobs never got a runner."""
    reservations = [made("a", 20, lifetime=10), made("b", 15, lifetime=5, started=False)]

    busy = count_reservations(reservations, 1, NOW, busy_runners=1)
    free = count_reservations(reservations, 1, NOW, busy_runners=0)

    # Still waiting, and still counted: its runner is there when the job before it ends.
    assert (busy.expired, busy.started, busy.waiting, busy.reserved) == (("a",), (), ("b",), 1)
    assert (free.started, free.waiting) == (("b",), ())


@pytest.mark.parametrize(("busy", "starting"), [(5, 0), (4, 1), (3, 2), (0, 5)])
def test_as_many_waiting_reservations_start_as_runners_are_free(busy: int, starting: int) -> None:
    """Found by a failure scenario (ten 20-minute jobs, ARC's default 10-minute reservations,
    maxReplicas 5): with four runners still busy on jobs whose reservations had expired, all
    five waiting reservations started, and four expired before a runner was free for them."""
    waiting = [made(f"job-{i}", 20 - i, started=False) for i in range(5)]

    count = count_reservations(waiting, 5, NOW, busy_runners=busy)

    assert count.started == tuple(f"job-{i}" for i in range(starting))
    assert len(count.waiting) == 5 - starting


def test_reservations_started_before_hold_their_runners_too() -> None:
    """Two started a minute ago: their runners are taken, busy or not yet."""
    reservations = [made("a", 1), made("b", 1), made("c", 0, started=False)]

    assert count_reservations(reservations, 2, NOW, busy_runners=0).started == ()
    assert count_reservations(reservations, 3, NOW, busy_runners=2).started == ("c",)
    assert count_reservations(reservations, 3, NOW, busy_runners=3).started == ()


@given(
    busy=st.integers(min_value=0, max_value=12),
    started=st.lists(st.booleans(), max_size=12),
    maximum=st.integers(min_value=1, max_value=8),
)
def test_started_reservations_never_take_more_runners_than_are_free(
    busy: int, started: list[bool], maximum: int
) -> None:
    reservations = [made(f"r{i:02}", 3, started=s) for i, s in enumerate(started)]
    held = sum(started)

    count = count_reservations(reservations, maximum, NOW, busy_runners=busy)

    free = maximum - max(held, busy)
    assert len(count.started) <= max(free, 0)


@given(
    busy=st.integers(min_value=0, max_value=12),
    started=st.lists(st.booleans(), max_size=12),
    maximum=st.integers(min_value=1, max_value=8),
)
def test_busy_runners_only_ever_hold_waiting_reservations_back(
    busy: int, started: list[bool], maximum: int
) -> None:
    reservations = [made(f"r{i:02}", 3, started=s) for i, s in enumerate(started)]

    with_busy = count_reservations(reservations, maximum, NOW, busy_runners=busy)
    without = count_reservations(reservations, maximum, NOW)

    assert set(with_busy.started) <= set(without.started)
    assert with_busy.reserved == without.reserved  # waiting ones count all the same
    assert with_busy.expired == without.expired


def test_arrival_order_is_effective_time_then_name() -> None:
    same_time = [made(name, 5, started=False) for name in ("z", "y", "x")]

    count = count_reservations(same_time, 1, NOW)

    assert (count.started, count.waiting) == (("x",), ("y", "z"))


def test_without_max_every_reservation_is_in_place() -> None:
    count = count_reservations([made(str(i), 1, started=False) for i in range(5)], None, NOW)

    assert (len(count.started), count.waiting) == (5, ())


def test_spec_reservations_count_from_their_effective_time() -> None:
    spec = [
        CapacityReservation(
            name="r",
            effective_time=format_time(NOW - MINUTE),
            expiration_time=format_time(NOW + MINUTE),
            replicas=2,
        ),
        CapacityReservation(expiration_time=format_time(NOW + MINUTE), replicas=1),
        CapacityReservation(effective_time=format_time(NOW), replicas=9),  # never counts
    ]

    reservations = reservations_from_spec(spec)

    assert [(r.name, r.replicas, r.started_at) for r in reservations] == [
        ("spec.capacityReservations[0] (r)", 2, NOW - MINUTE),
        ("spec.capacityReservations[1]", 1, NOW + MINUTE),
    ]
    assert count_reservations(reservations, 1, NOW).reserved == 3


def test_an_unparsable_spec_reservation_is_an_autoscaling_error() -> None:
    with pytest.raises(AutoscalingError, match=r"capacityReservations\[0\].expirationTime"):
        reservations_from_spec([CapacityReservation(expiration_time="soon")])


def ending(name: str, *, renewable: bool = True) -> Reservation:
    """Started ten minutes ago with a ten-minute lifetime: it ends now."""
    return replace(made(name, 10, lifetime=10), renewable=renewable)


def test_a_jobs_reservation_ending_while_busy_runners_hold_it_is_renewed() -> None:
    count = count_reservations([ending("a"), ending("b")], 5, NOW, busy_runners=1, renew_beyond=0)

    assert (count.renewed, count.expired, count.reserved) == (("a",), ("b",), 1)
    assert count.next_expiry == NOW + 10 * MINUTE


def test_spec_reservations_are_never_renewed() -> None:
    """ARC's `spec.capacityReservations` last until the expiration time their writer chose."""
    count = count_reservations(
        [ending("spec", renewable=False)], 5, NOW, busy_runners=3, renew_beyond=0
    )

    assert (count.renewed, count.expired) == ((), ("spec",))


def test_a_renewed_reservation_lasts_a_lifetime_from_its_renewal() -> None:
    renewed = replace(ending("a"), renewed_at=NOW - 9 * MINUTE)

    assert count_reservations([renewed], 5, NOW).expired == ()
    assert count_reservations([renewed], 5, NOW + MINUTE).expired == ("a",)


@given(
    busy=st.integers(min_value=0, max_value=12),
    ages=st.lists(st.integers(min_value=0, max_value=20), max_size=12),
    maximum=st.integers(min_value=1, max_value=8),
    warm=st.integers(min_value=0, max_value=6),
)
def test_renewals_never_outnumber_the_busy_runners_no_reservation_accounts_for(
    busy: int, ages: list[int], maximum: int, warm: int
) -> None:
    reservations = [
        replace(made(f"r{i:02}", age, lifetime=10), renewable=True) for i, age in enumerate(ages)
    ]
    still = sum(1 for r in reservations if r.expires_at(NOW) > NOW)

    count = count_reservations(reservations, maximum, NOW, busy_runners=busy, renew_beyond=warm)

    assert len(count.renewed) <= max(busy - warm - still, 0)
    assert not set(count.renewed) & set(count.expired)
    assert count.reserved == len(reservations) - len(count.expired)


def test_busy_warm_runners_renew_nothing() -> None:
    """Found in review: six warm runners (`minReplicas: 6`) busy with six hour-long jobs kept
    six reservations, and six more runners, for the hour; a reservation whose `completed`
    was lost was renewed as long."""
    reservations = [ending(f"r{i}") for i in range(6)]

    warm = count_reservations(reservations, 12, NOW, busy_runners=6, renew_beyond=6)
    beyond = count_reservations(reservations, 12, NOW, busy_runners=8, renew_beyond=6)

    assert (warm.renewed, len(warm.expired)) == ((), 6)
    assert len(beyond.renewed) == 2


def test_an_hra_with_metrics_renews_nothing() -> None:
    count = count_reservations([ending("a")], 5, NOW, busy_runners=3, renew_beyond=None)

    assert (count.renewed, count.expired) == ((), ("a",))


def test_a_reservation_of_no_replicas_is_never_renewed() -> None:
    """Found in review: `replicas: 0` always fit, and was renewed forever with nothing busy."""
    empty = replace(ending("empty"), replicas=0)

    count = count_reservations([empty], 5, NOW, busy_runners=0, renew_beyond=0)

    assert (count.renewed, count.expired) == ((), ("empty",))


def test_a_renewal_recorded_ahead_of_now_is_not_believed() -> None:
    """Found in review: a `renewTime` an hour ahead (a replica's clock, a hand's edit) kept the
    reservation for the hour and a lifetime."""
    ahead = replace(ending("a"), renewed_at=NOW + 60 * MINUTE)

    assert count_reservations([ahead], 5, NOW + 10 * MINUTE).expired == ("a",)


def unmarked(name: str) -> Reservation:
    """Ending now, its job not taken by a runner yet (no `in_progress` seen)."""
    return replace(ending(name), job_started=False)


def test_a_reservation_whose_job_no_runner_took_is_renewed_while_none_sits_idle() -> None:
    count = count_reservations([unmarked("a")], 5, NOW, renew_beyond=0)
    idle = count_reservations([unmarked("a")], 5, NOW, renew_beyond=0, idle_runners=1)
    metric = count_reservations([unmarked("a")], 5, NOW, renew_beyond=None)

    assert (count.renewed, count.expired) == (("a",), ())
    # Found in review: a job whose deliveries were lost held an idle runner for good, and an
    # HRA with metrics renewed it again.
    assert (idle.renewed, idle.expired) == ((), ("a",))
    assert (metric.renewed, metric.expired) == ((), ("a",))


def test_an_unmarked_reservation_takes_the_busy_runner_it_may_run_on() -> None:
    """Found in review: one busy runner renewed two reservations, an unmarked one and one of a
    running job."""
    count = count_reservations([unmarked("a"), ending("b")], 5, NOW, busy_runners=1, renew_beyond=0)

    assert (count.renewed, count.expired) == (("a",), ("b",))
