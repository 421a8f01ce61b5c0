"""Ported from actions/actions-runner-controller (Apache-2.0)

ARC's tests of its scheduled-override matcher, at revision 2ee6b3b8 of
controllers/actions.summerwind.net/schedule_test.go:

- `TestCalculateActiveAndUpcomingRecurringPeriods`: every `t.Run` row, in ARC's order. Each
  id is the name Go gives the subtest (spaces as `_`, `#01` on a repeated name: ARC reuses
  four names).
- `FuzzMatchSchedule`: that no frequency string makes matching fail other than with an error.

ARC's `parseAndMatchRecurringPeriod` parses RFC 3339 strings and calls `MatchSchedule`; here
`parse_and_match_recurring_period` does the same with `hooks.autoscaler.schedule.match_schedule`.
ARC returns an error where ours raises `AutoscalingError`. A period prints as ARC's
`Period.String()`, and a nil period as "".
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hooks.autoscaler import AutoscalingError
from hooks.autoscaler.schedule import Period, Schedule, ScheduleMatch, match_schedule
from hooks.clock import parse_time


@dataclass(frozen=True)
class Recurrence:
    start: str
    end: str
    freq: str = ""
    until: str = ""


@dataclass(frozen=True)
class ScheduleCase:
    now: str
    recurrence: Recurrence
    want_active: str
    want_upcoming: str


def parse_and_match_recurring_period(
    now: datetime, start: str, end: str, frequency: str, until: str
) -> ScheduleMatch:
    """ARC's helper of the same name: an empty `until` is Go's zero time, no end."""
    return match_schedule(
        Schedule(
            start=parse_time(start),
            end=parse_time(end),
            frequency=frequency,
            until=parse_time(until) if until else None,
        ),
        now,
    )


def period_string(period: Period | None) -> str:
    """ARC's `(*Period).String()`, which is "" for nil."""
    return "" if period is None else str(period)


CALCULATE_ACTIVE_AND_UPCOMING_RECURRING_PERIODS = [
    # TestCalculateActiveAndUpcomingRecurringPeriods: "onetime override about to start"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
            ),
            now="2021-04-30T23:59:59+09:00",
            want_active="",
            want_upcoming="2021-05-01T00:00:00+09:00-2021-05-03T00:00:00+09:00",
        ),
        id="onetime_override_about_to_start",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "onetime override started"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
            ),
            now="2021-05-01T00:00:00+09:00",
            want_active="2021-05-01T00:00:00+09:00-2021-05-03T00:00:00+09:00",
            want_upcoming="",
        ),
        id="onetime_override_started",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "onetime override about to end"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
            ),
            now="2021-05-02T23:59:59+09:00",
            want_active="2021-05-01T00:00:00+09:00-2021-05-03T00:00:00+09:00",
            want_upcoming="",
        ),
        id="onetime_override_about_to_end",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "onetime override ended"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
            ),
            now="2021-05-03T00:00:00+09:00",
            want_active="",
            want_upcoming="",
        ),
        id="onetime_override_ended",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "weekly override about to start"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Weekly",
                until="2022-05-01T00:00:00+09:00",
            ),
            now="2021-04-30T23:59:59+09:00",
            want_active="",
            want_upcoming="2021-05-01T00:00:00+09:00-2021-05-03T00:00:00+09:00",
        ),
        id="weekly_override_about_to_start",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "weekly override started"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Weekly",
                until="2022-05-01T00:00:00+09:00",
            ),
            now="2021-05-01T00:00:00+09:00",
            want_active="2021-05-01T00:00:00+09:00-2021-05-03T00:00:00+09:00",
            want_upcoming="2021-05-08T00:00:00+09:00-2021-05-10T00:00:00+09:00",
        ),
        id="weekly_override_started",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "weekly override about to end"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Weekly",
                until="2022-05-01T00:00:00+09:00",
            ),
            now="2021-05-02T23:59:59+09:00",
            want_active="2021-05-01T00:00:00+09:00-2021-05-03T00:00:00+09:00",
            want_upcoming="2021-05-08T00:00:00+09:00-2021-05-10T00:00:00+09:00",
        ),
        id="weekly_override_about_to_end",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "weekly override ended"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Weekly",
                until="2022-05-01T00:00:00+09:00",
            ),
            now="2021-05-03T00:00:00+09:00",
            want_active="",
            want_upcoming="2021-05-08T00:00:00+09:00-2021-05-10T00:00:00+09:00",
        ),
        id="weekly_override_ended",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "weekly override reccurrence about to start"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Weekly",
                until="2022-05-01T00:00:00+09:00",
            ),
            now="2021-05-07T23:59:59+09:00",
            want_active="",
            want_upcoming="2021-05-08T00:00:00+09:00-2021-05-10T00:00:00+09:00",
        ),
        id="weekly_override_reccurrence_about_to_start",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "weekly override reccurrence started"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Weekly",
                until="2022-05-01T00:00:00+09:00",
            ),
            now="2021-05-08T00:00:00+09:00",
            want_active="2021-05-08T00:00:00+09:00-2021-05-10T00:00:00+09:00",
            want_upcoming="2021-05-15T00:00:00+09:00-2021-05-17T00:00:00+09:00",
        ),
        id="weekly_override_reccurrence_started",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "weekly override reccurrence about to end"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Weekly",
                until="2022-05-01T00:00:00+09:00",
            ),
            now="2021-05-09T23:59:59+09:00",
            want_active="2021-05-08T00:00:00+09:00-2021-05-10T00:00:00+09:00",
            want_upcoming="2021-05-15T00:00:00+09:00-2021-05-17T00:00:00+09:00",
        ),
        id="weekly_override_reccurrence_about_to_end",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "weekly override reccurrence ended"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Weekly",
                until="2022-05-01T00:00:00+09:00",
            ),
            now="2021-05-10T00:00:00+09:00",
            want_active="",
            want_upcoming="2021-05-15T00:00:00+09:00-2021-05-17T00:00:00+09:00",
        ),
        id="weekly_override_reccurrence_ended",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods:
    # "weekly override's last reccurrence about to start"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Weekly",
                until="2022-05-01T00:00:00+09:00",
            ),
            now="2022-04-29T23:59:59+09:00",
            want_active="",
            want_upcoming="2022-04-30T00:00:00+09:00-2022-05-02T00:00:00+09:00",
        ),
        id="weekly_override's_last_reccurrence_about_to_start",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "weekly override reccurrence started"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Weekly",
                until="2022-05-01T00:00:00+09:00",
            ),
            now="2022-04-30T00:00:00+09:00",
            want_active="2022-04-30T00:00:00+09:00-2022-05-02T00:00:00+09:00",
            want_upcoming="",
        ),
        id="weekly_override_reccurrence_started#01",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "weekly override reccurrence about to end"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Weekly",
                until="2022-05-01T00:00:00+09:00",
            ),
            now="2022-05-01T23:59:59+09:00",
            want_active="2022-04-30T00:00:00+09:00-2022-05-02T00:00:00+09:00",
            want_upcoming="",
        ),
        id="weekly_override_reccurrence_about_to_end#01",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "weekly override reccurrence ended"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Weekly",
                until="2022-05-01T00:00:00+09:00",
            ),
            now="2022-05-02T00:00:00+09:00",
            want_active="",
            want_upcoming="",
        ),
        id="weekly_override_reccurrence_ended#01",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "weekly override repeated forever started"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Weekly",
            ),
            now="2021-05-08T00:00:00+09:00",
            want_active="2021-05-08T00:00:00+09:00-2021-05-10T00:00:00+09:00",
            want_upcoming="2021-05-15T00:00:00+09:00-2021-05-17T00:00:00+09:00",
        ),
        id="weekly_override_repeated_forever_started",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "monthly override started"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Monthly",
                until="2022-05-01T00:00:00+09:00",
            ),
            now="2021-05-01T00:00:00+09:00",
            want_active="2021-05-01T00:00:00+09:00-2021-05-03T00:00:00+09:00",
            want_upcoming="2021-06-01T00:00:00+09:00-2021-06-03T00:00:00+09:00",
        ),
        id="monthly_override_started",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "monthly override recurrence started"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Monthly",
                until="2022-05-01T00:00:00+09:00",
            ),
            now="2021-06-01T00:00:00+09:00",
            want_active="2021-06-01T00:00:00+09:00-2021-06-03T00:00:00+09:00",
            want_upcoming="2021-07-01T00:00:00+09:00-2021-07-03T00:00:00+09:00",
        ),
        id="monthly_override_recurrence_started",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods:
    # "monthly override's last reccurence about to start"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Monthly",
                until="2022-05-01T00:00:00+09:00",
            ),
            now="2022-04-30T23:59:59+09:00",
            want_active="",
            want_upcoming="2022-05-01T00:00:00+09:00-2022-05-03T00:00:00+09:00",
        ),
        id="monthly_override's_last_reccurence_about_to_start",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "monthly override's last reccurence started"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Monthly",
                until="2022-05-01T00:00:00+09:00",
            ),
            now="2022-05-01T00:00:00+09:00",
            want_active="2022-05-01T00:00:00+09:00-2022-05-03T00:00:00+09:00",
            want_upcoming="",
        ),
        id="monthly_override's_last_reccurence_started",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "monthly override's last reccurence started"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Monthly",
                until="2022-05-01T00:00:00+09:00",
            ),
            now="2022-05-01T00:00:01+09:00",
            want_active="2022-05-01T00:00:00+09:00-2022-05-03T00:00:00+09:00",
            want_upcoming="",
        ),
        id="monthly_override's_last_reccurence_started#01",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "monthly override's last reccurence ending"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Monthly",
                until="2022-05-01T00:00:00+09:00",
            ),
            now="2022-05-02T23:59:59+09:00",
            want_active="2022-05-01T00:00:00+09:00-2022-05-03T00:00:00+09:00",
            want_upcoming="",
        ),
        id="monthly_override's_last_reccurence_ending",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "monthly override's last reccurence ended"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Monthly",
                until="2022-05-01T00:00:00+09:00",
            ),
            now="2022-05-03T00:00:00+09:00",
            want_active="",
            want_upcoming="",
        ),
        id="monthly_override's_last_reccurence_ended",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "yearly override started"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Yearly",
                until="2022-05-01T00:00:00+09:00",
            ),
            now="2021-05-01T00:00:00+09:00",
            want_active="2021-05-01T00:00:00+09:00-2021-05-03T00:00:00+09:00",
            want_upcoming="2022-05-01T00:00:00+09:00-2022-05-03T00:00:00+09:00",
        ),
        id="yearly_override_started",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "yearly override reccurrence started"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Yearly",
                until="2023-05-01T00:00:00+09:00",
            ),
            now="2022-05-01T00:00:00+09:00",
            want_active="2022-05-01T00:00:00+09:00-2022-05-03T00:00:00+09:00",
            want_upcoming="2023-05-01T00:00:00+09:00-2023-05-03T00:00:00+09:00",
        ),
        id="yearly_override_reccurrence_started",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods:
    # "yearly override's last recurrence about to start"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Yearly",
                until="2023-05-01T00:00:00+09:00",
            ),
            now="2023-04-30T23:59:59+09:00",
            want_active="",
            want_upcoming="2023-05-01T00:00:00+09:00-2023-05-03T00:00:00+09:00",
        ),
        id="yearly_override's_last_recurrence_about_to_start",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "yearly override's last recurrence started"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Yearly",
                until="2023-05-01T00:00:00+09:00",
            ),
            now="2023-05-01T00:00:00+09:00",
            want_active="2023-05-01T00:00:00+09:00-2023-05-03T00:00:00+09:00",
            want_upcoming="",
        ),
        id="yearly_override's_last_recurrence_started",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "yearly override's last recurrence ending"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Yearly",
                until="2023-05-01T00:00:00+09:00",
            ),
            now="2023-05-02T23:23:59+09:00",
            want_active="2023-05-01T00:00:00+09:00-2023-05-03T00:00:00+09:00",
            want_upcoming="",
        ),
        id="yearly_override's_last_recurrence_ending",
    ),
    # TestCalculateActiveAndUpcomingRecurringPeriods: "yearly override's last recurrence ended"
    pytest.param(
        ScheduleCase(
            recurrence=Recurrence(
                start="2021-05-01T00:00:00+09:00",
                end="2021-05-03T00:00:00+09:00",
                freq="Yearly",
                until="2023-05-01T00:00:00+09:00",
            ),
            now="2023-05-03T00:00:00+09:00",
            want_active="",
            want_upcoming="",
        ),
        id="yearly_override's_last_recurrence_ended",
    ),
]


@pytest.mark.parametrize("tc", CALCULATE_ACTIVE_AND_UPCOMING_RECURRING_PERIODS)
def test_calculate_active_and_upcoming_recurring_periods(tc: ScheduleCase) -> None:
    now = parse_time(tc.now)

    match = parse_and_match_recurring_period(
        now, tc.recurrence.start, tc.recurrence.end, tc.recurrence.freq, tc.recurrence.until
    )

    assert period_string(match.active) == tc.want_active, "unexpected active"
    assert period_string(match.upcoming) == tc.want_upcoming, "unexpected upcoming"


# FuzzMatchSchedule: ARC fuzzes the frequency with start, end and now all `time.Now()`; a fixed
# moment stands in for the wall clock. Derandomized so that every run tries the same strings.
FUZZ_MOMENT = parse_time("2021-05-01T00:00:00+09:00")


@settings(derandomize=True)
@given(freq=st.text())
def test_match_schedule_never_panics(freq: str) -> None:
    # Go's "never panics" is, in Python, "returns or raises AutoscalingError only".
    with contextlib.suppress(AutoscalingError):
        match_schedule(Schedule(FUZZ_MOMENT, FUZZ_MOMENT, freq), FUZZ_MOMENT)
