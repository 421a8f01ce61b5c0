"""Scheduled overrides beyond ARC's `schedule_test.go` (ported in test_arc_schedule.py): active
and upcoming periods ARC's table leaves out, invalid schedules, override priority, the status
summary and the next boundary."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

import pytest
from dateutil import rrule
from hypothesis import given
from hypothesis import strategies as st

from hooks.autoscaler import AutoscalingError, active_override, next_boundary
from hooks.autoscaler.schedule import (
    TICK,
    Schedule,
    effective_min_replicas,
    match_schedule,
    one_period_later,
    recurrence,
    rfc3339,
    scheduled_overrides_summary,
)
from hooks.clock import parse_time
from hooks.resources.autoscaler import RecurrenceRule, ScheduledOverride

START = "2021-05-01T00:00:00+09:00"  # a Saturday
END = "2021-05-03T00:00:00+09:00"


@dataclass(frozen=True)
class Case:
    name: str
    now: str
    want_active: str
    want_upcoming: str
    freq: str = ""
    until: str = ""
    start: str = START
    end: str = END


def period(start: str, end: str) -> str:
    return f"{start}-{end}"


CASES = [
    # Weekly, forever, years after its first start.
    Case(
        "weekly override repeated forever about to start",
        "2024-04-26T23:59:59+09:00",
        "",
        period("2024-04-27T00:00:00+09:00", "2024-04-29T00:00:00+09:00"),
        freq="Weekly",
    ),
    Case(
        "weekly override repeated forever started",
        "2024-04-27T00:00:00+09:00",
        period("2024-04-27T00:00:00+09:00", "2024-04-29T00:00:00+09:00"),
        period("2024-05-04T00:00:00+09:00", "2024-05-06T00:00:00+09:00"),
        freq="Weekly",
    ),
    Case(
        "weekly override repeated forever about to end",
        "2024-04-28T23:59:59+09:00",
        period("2024-04-27T00:00:00+09:00", "2024-04-29T00:00:00+09:00"),
        period("2024-05-04T00:00:00+09:00", "2024-05-06T00:00:00+09:00"),
        freq="Weekly",
    ),
    Case(
        "weekly override repeated forever ended",
        "2024-04-29T00:00:00+09:00",
        "",
        period("2024-05-04T00:00:00+09:00", "2024-05-06T00:00:00+09:00"),
        freq="Weekly",
    ),
    # untilTime between two starts; the upcoming window ends exactly one period later.
    Case(
        "weekly override with untilTime before its next start",
        "2021-05-08T00:00:00+09:00",
        period("2021-05-08T00:00:00+09:00", "2021-05-10T00:00:00+09:00"),
        "",
        freq="Weekly",
        until="2021-05-14T23:59:59+09:00",
    ),
    Case(
        "yearly override repeated forever started",
        "2030-05-01T00:00:00+09:00",
        period("2030-05-01T00:00:00+09:00", "2030-05-03T00:00:00+09:00"),
        period("2031-05-01T00:00:00+09:00", "2031-05-03T00:00:00+09:00"),
        freq="Yearly",
    ),
    # ARC's table has no daily override.
    Case(
        "daily override about to start",
        "2021-05-03T08:59:59+09:00",
        "",
        period("2021-05-03T09:00:00+09:00", "2021-05-03T18:00:00+09:00"),
        freq="Daily",
        start="2021-05-01T09:00:00+09:00",
        end="2021-05-01T18:00:00+09:00",
    ),
]


def text(value: object | None) -> str:
    return "" if value is None else str(value)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_active_and_upcoming_periods(case: Case) -> None:
    schedule = Schedule(
        start=parse_time(case.start),
        end=parse_time(case.end),
        frequency=case.freq,
        until=parse_time(case.until) if case.until else None,
    )

    match = match_schedule(schedule, parse_time(case.now))

    assert text(match.active) == case.want_active
    assert text(match.upcoming) == case.want_upcoming


def test_periods_keep_the_start_time_zone_whatever_the_zone_of_now() -> None:
    schedule = Schedule(parse_time(START), parse_time(END), "Weekly")

    match = match_schedule(schedule, parse_time("2021-05-07T15:00:00Z"))

    assert text(match.active) == period("2021-05-08T00:00:00+09:00", "2021-05-10T00:00:00+09:00")


def test_utc_periods_print_z() -> None:
    schedule = Schedule(parse_time("2021-05-01T00:00:00Z"), parse_time("2021-05-02T00:00:00Z"))

    match = match_schedule(schedule, parse_time("2021-05-01T12:00:00Z"))

    assert text(match.active) == "2021-05-01T00:00:00Z-2021-05-02T00:00:00Z"


@pytest.mark.parametrize(
    ("start", "end", "freq", "now", "error"),
    [
        (
            "2021-05-01T00:00:00Z",
            "2021-05-02T00:00:01Z",
            "Daily",
            "2021-05-01T00:00:00Z",
            "override's duration 24h0m1s must be equal to or shorter than the duration "
            'implied by freq "Daily" (24h0m0s)',
        ),
        (
            "2021-05-01T00:00:00Z",
            "2021-05-08T00:00:01Z",
            "Weekly",
            "2021-05-01T00:00:00Z",
            "override's duration 168h0m1s must be equal to or shorter than the duration "
            'implied by freq "Weekly" (168h0m0s)',
        ),
        # Go's time.Date measures a month from now: in February it is 28 days long.
        (
            "2021-01-01T00:00:00Z",
            "2021-01-30T00:00:00Z",
            "Monthly",
            "2021-02-01T00:00:00Z",
            "override's duration 696h0m0s must be equal to or shorter than the duration "
            'implied by freq "Monthly" (672h0m0s)',
        ),
        (
            "2021-05-01T00:00:00Z",
            "2021-05-02T00:00:00Z",
            "Hourly",
            "2021-05-01T00:00:00Z",
            'invalid freq: It must be one of "Daily", "Weekly", "Monthly", and "Yearly"',
        ),
    ],
)
def test_invalid_schedules(start: str, end: str, freq: str, now: str, error: str) -> None:
    schedule = Schedule(parse_time(start), parse_time(end), freq)

    with pytest.raises(AutoscalingError) as raised:
        match_schedule(schedule, parse_time(now))

    assert str(raised.value) == error


def test_a_monthly_duration_that_fits_in_january_is_valid_then() -> None:
    schedule = Schedule(parse_time("2021-01-01T00:00:00Z"), parse_time("2021-01-30T00:00:00Z"))
    monthly = Schedule(schedule.start, schedule.end, "Monthly")

    match = match_schedule(monthly, parse_time("2021-01-15T00:00:00Z"))

    assert text(match.active) == "2021-01-01T00:00:00Z-2021-01-30T00:00:00Z"


def test_a_monthly_override_on_the_31st_skips_short_months() -> None:
    monthly = Schedule(
        parse_time("2021-01-31T00:00:00Z"), parse_time("2021-01-31T12:00:00Z"), "Monthly"
    )

    match = match_schedule(monthly, parse_time("2021-03-01T00:00:00Z"))

    assert text(match.upcoming) == "2021-03-31T00:00:00Z-2021-03-31T12:00:00Z"


# Overrides as the HRA spec holds them.


def override(
    start: str,
    end: str,
    min_replicas: int | None = None,
    freq: str | None = None,
    until: str | None = None,
) -> ScheduledOverride:
    rule = RecurrenceRule(frequency=freq, until_time=until) if freq else None
    return ScheduledOverride(
        start_time=start, end_time=end, min_replicas=min_replicas, recurrence_rule=rule
    )


NOW = parse_time("2021-05-02T00:00:00Z")
ACTIVE_NO_MIN = override("2021-05-01T00:00:00Z", "2021-05-03T00:00:00Z")
ACTIVE_MIN_0 = override("2021-05-01T12:00:00Z", "2021-05-04T00:00:00Z", 0)
UPCOMING_MIN_5 = override("2021-05-10T00:00:00Z", "2021-05-11T00:00:00Z", 5)
UPCOMING_SOONER_MIN_7 = override("2021-05-05T00:00:00Z", "2021-05-06T00:00:00Z", 7)
PAST = override("2021-04-01T00:00:00Z", "2021-04-02T00:00:00Z", 9)


def test_the_first_active_override_wins_even_without_min_replicas() -> None:
    overrides = [PAST, ACTIVE_NO_MIN, ACTIVE_MIN_0]

    active = active_override(overrides, NOW)

    assert active is not None and active.index == 1
    assert effective_min_replicas(2, overrides, NOW) == 2
    assert effective_min_replicas(2, overrides[2:], NOW) == 0


@pytest.mark.parametrize(("spec_min", "want"), [(None, 1), (-1, 1), (0, 0), (3, 3)], ids=str)
def test_min_replicas_without_an_active_override(spec_min: int | None, want: int) -> None:
    assert effective_min_replicas(spec_min, [PAST, UPCOMING_MIN_5], NOW) == want


def test_an_invalid_override_fails_even_after_an_active_one() -> None:
    invalid = override("2021-05-01T00:00:00Z", "2021-05-09T00:00:00Z", 1, freq="Weekly")

    with pytest.raises(AutoscalingError, match="must be equal to or shorter"):
        effective_min_replicas(1, [ACTIVE_MIN_0, invalid], NOW)


def test_an_unparsable_time_is_an_autoscaling_error() -> None:
    with pytest.raises(AutoscalingError) as raised:
        active_override([PAST, override("tomorrow", "2021-05-03T00:00:00Z")], NOW)

    assert str(raised.value) == "spec.scheduledOverrides[1].startTime is not an RFC 3339 time"


@pytest.mark.parametrize(
    ("spec_min", "overrides", "want"),
    [
        # Active and nothing upcoming: the spec's minimum, from the end of the active one.
        (2, [ACTIVE_MIN_0], "min=2 time=2021-05-04 00:00:00 +0000 UTC"),
        (-1, [ACTIVE_MIN_0], "min=1 time=2021-05-04 00:00:00 +0000 UTC"),
        # Active ending before the upcoming one starts: still the end of the active one.
        (2, [ACTIVE_MIN_0, UPCOMING_MIN_5], "min=2 time=2021-05-04 00:00:00 +0000 UTC"),
        # Upcoming only: its minimum from its start; the soonest upcoming one.
        (2, [UPCOMING_MIN_5], "min=5 time=2021-05-10 00:00:00 +0000 UTC"),
        (2, [UPCOMING_MIN_5, UPCOMING_SOONER_MIN_7], "min=7 time=2021-05-05 00:00:00 +0000 UTC"),
        # An upcoming override without minReplicas, or none at all: ARC writes nothing.
        (2, [override("2021-05-10T00:00:00Z", "2021-05-11T00:00:00Z")], None),
        (2, [PAST], None),
        (2, [], None),
        # Active until exactly when the upcoming one starts: neither branch of ARC's.
        (2, [ACTIVE_MIN_0, override("2021-05-04T00:00:00Z", "2021-05-05T00:00:00Z", 4)], None),
        # Active ending after the upcoming one starts: the upcoming one's minimum.
        (
            2,
            [ACTIVE_MIN_0, override("2021-05-03T00:00:00+09:00", "2021-05-05T00:00:00Z", 4)],
            "min=4 time=2021-05-02 15:00:00 +0000 UTC",
        ),
    ],
)
def test_scheduled_overrides_summary(
    spec_min: int, overrides: list[ScheduledOverride], want: str | None
) -> None:
    assert scheduled_overrides_summary(spec_min, overrides, NOW) == want


@pytest.mark.parametrize(
    ("overrides", "want"),
    [
        ([], None),
        ([PAST], None),
        ([UPCOMING_MIN_5], "2021-05-10T00:00:00Z"),
        ([ACTIVE_MIN_0, UPCOMING_SOONER_MIN_7], "2021-05-04T00:00:00Z"),
        ([UPCOMING_MIN_5, UPCOMING_SOONER_MIN_7], "2021-05-05T00:00:00Z"),
        # Active weekly: it ends before it starts again.
        (
            [override("2021-04-24T00:00:00Z", "2021-04-26T00:00:00Z", 0, freq="Weekly")],
            "2021-05-03T00:00:00Z",
        ),
        # The next start of a monthly override on the 31st lies beyond a month from now.
        (
            [override("2021-01-31T00:00:00Z", "2021-01-31T12:00:00Z", 0, freq="Monthly")],
            "2021-05-31T00:00:00Z",
        ),
        # untilTime passed: nothing more.
        (
            [
                override(
                    "2021-01-01T00:00:00Z",
                    "2021-01-01T01:00:00Z",
                    0,
                    freq="Daily",
                    until="2021-04-01T00:00:00Z",
                )
            ],
            None,
        ),
    ],
)
def test_next_boundary(overrides: list[ScheduledOverride], want: str | None) -> None:
    boundary = next_boundary(overrides, NOW)

    assert boundary == (parse_time(want) if want else None)


def test_next_boundary_is_strictly_after_now() -> None:
    daily = override("2021-05-01T00:00:00Z", "2021-05-01T06:00:00Z", 0, freq="Daily")

    assert next_boundary([daily], NOW) == datetime(2021, 5, 2, 6, tzinfo=UTC)
    assert next_boundary([daily], datetime(2021, 5, 2, 6, tzinfo=UTC)) == datetime(
        2021, 5, 3, tzinfo=UTC
    )


REFERENCE_RULES: dict[str, Literal[0, 1, 2, 3, 4, 5, 6]] = {
    "Daily": rrule.DAILY,
    "Weekly": rrule.WEEKLY,
    "Monthly": rrule.MONTHLY,
    "Yearly": rrule.YEARLY,
}


def reference_match(schedule: Schedule, now: datetime) -> tuple[str, str]:
    """Active and upcoming periods from an rrule walked from the very first start (the
    upcoming window ends one period after now, normalized as Go's `time.Date` does)."""
    duration = schedule.end - schedule.start
    rule = rrule.rrule(
        REFERENCE_RULES[schedule.frequency], dtstart=schedule.start, until=schedule.until
    )
    active = rule.between(now - duration + TICK, now, inc=True)
    upcoming = rule.between(now + TICK, one_period_later(schedule.frequency, now), inc=True)
    return (
        f"{rfc3339(active[0])}-{rfc3339(active[0] + duration)}" if active else "",
        f"{rfc3339(upcoming[0])}-{rfc3339(upcoming[0] + duration)}" if upcoming else "",
    )


BERLIN = ZoneInfo("Europe/Berlin")


@pytest.mark.parametrize("frequency", ["Daily", "Weekly"])
@pytest.mark.parametrize(
    "now",
    [
        datetime(2026, 3, 28, 23, 30, tzinfo=UTC),  # around the spring daylight-saving change
        datetime(2026, 3, 29, 8, 0, tzinfo=UTC),
        datetime(2026, 10, 25, 0, 30, tzinfo=UTC),  # and the autumn one
        datetime(2026, 1, 1, 3, 0, tzinfo=UTC),
        datetime(2026, 1, 1, 2, 59, 59, tzinfo=UTC),
    ],
    ids=str,
)
def test_years_old_schedules_match_as_if_walked_from_their_first_start(
    frequency: str, now: datetime
) -> None:
    for start, end in [
        (datetime(2015, 1, 1, 3, tzinfo=UTC), datetime(2015, 1, 1, 11, tzinfo=UTC)),
        (datetime(2015, 1, 4, 1, 30, tzinfo=BERLIN), datetime(2015, 1, 4, 9, tzinfo=BERLIN)),
    ]:
        schedule = Schedule(start, end, frequency)

        match = match_schedule(schedule, now)

        assert (text(match.active), text(match.upcoming)) == reference_match(schedule, now)


@given(
    frequency=st.sampled_from(["Monthly", "Yearly"]),
    start=st.datetimes(datetime(1990, 1, 1), datetime(2027, 12, 31), timezones=st.just(UTC)),
    hours=st.integers(1, 27 * 24),
    now=st.datetimes(datetime(2026, 1, 1), datetime(2028, 12, 31), timezones=st.just(UTC)),
)
def test_monthly_and_yearly_schedules_match_as_if_walked_from_their_first_start(
    frequency: str, start: datetime, hours: int, now: datetime
) -> None:
    """The walk starts the year before `now` (a start on the 29th to 31st skips the months
    without that day, and February 29 the years without it, as the walk from the start does)."""
    start = start.replace(microsecond=0)
    schedule = Schedule(start, start + timedelta(hours=hours), frequency)

    match = match_schedule(schedule, now)

    assert (text(match.active), text(match.upcoming)) == reference_match(schedule, now)


@pytest.mark.parametrize(
    ("frequency", "now"),
    [
        ("Monthly", datetime(2026, 3, 31, 7, tzinfo=UTC)),
        ("Yearly", datetime(2026, 1, 31, 7, tzinfo=UTC)),
    ],
)
def test_a_schedule_from_year_one_is_walked_from_the_year_before_now(
    frequency: str, now: datetime
) -> None:
    """A start in year 1 (a valid date-time) walked month by month took a second a sync."""
    start = datetime(1, 1, 31, 6, tzinfo=UTC)
    schedule = Schedule(start, start + timedelta(hours=2), frequency)

    walk = recurrence(schedule, not_before=now)

    assert walk.after(datetime(2025, 1, 1, tzinfo=UTC)) == datetime(2025, 1, 31, 6, tzinfo=UTC)
    assert next(iter(walk)).year == 2025
    active = match_schedule(schedule, now).active
    assert active is not None and active.start == now - timedelta(hours=1)
