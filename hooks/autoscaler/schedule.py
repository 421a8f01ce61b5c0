"""Scheduled overrides (`spec.scheduledOverrides`), as ARC's `schedule.go` matches them.

An override is one-off (no frequency) or recurs Daily, Weekly, Monthly or Yearly from its start,
until `untilTime` (which bounds the last *start*, inclusively). For a recurring override:

- its duration (end - start) may not exceed the period of its frequency, measured from now as
  Go's `time.Date` does (one month from Jan 31 is Mar 3 or Mar 2, not Feb 28);
- it is active when an occurrence starts in [now - duration + 1 tick, now];
- it is upcoming when an occurrence starts in (now, now + period].

Go's tick is a nanosecond; ours is a microsecond, the resolution of `datetime`. Occurrences fall
on whole seconds (rrule drops sub-second parts of the start), so the two agree.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from dateutil import rrule

from hooks.autoscaler.errors import AutoscalingError
from hooks.clock import parse_time
from hooks.resources.autoscaler import ScheduledOverride

TICK = timedelta(microseconds=1)
DEFAULT_MIN_REPLICAS = 1
# ARC's message without the frequency it quotes: the field may hold any text.
_INVALID_FREQUENCY = 'invalid freq: It must be one of "Daily", "Weekly", "Monthly", and "Yearly"'


@dataclass(frozen=True)
class _Frequency:
    rule: Literal[0, 1, 2, 3, 4, 5, 6]  # dateutil's YEARLY ... SECONDLY
    years: int = 0  # the period, as Go's `time.Date` adds it
    months: int = 0
    days: int = 0


_FREQUENCIES = {
    "Daily": _Frequency(rrule.DAILY, days=1),
    "Weekly": _Frequency(rrule.WEEKLY, days=7),
    "Monthly": _Frequency(rrule.MONTHLY, months=1),
    "Yearly": _Frequency(rrule.YEARLY, years=1),
}


@dataclass(frozen=True)
class Period:
    start: datetime
    end: datetime

    def __str__(self) -> str:
        """ARC's `Period.String()`: `<RFC 3339 start>-<RFC 3339 end>`."""
        return f"{rfc3339(self.start)}-{rfc3339(self.end)}"


@dataclass(frozen=True)
class Schedule:
    """One override's times, parsed."""

    start: datetime
    end: datetime
    frequency: str = ""  # "" for a one-off override
    until: datetime | None = None


@dataclass(frozen=True)
class ScheduleMatch:
    """The active and upcoming periods of one schedule at some moment, or None."""

    active: Period | None
    upcoming: Period | None


@dataclass(frozen=True)
class MatchedOverride:
    """An override with the period in which it matched."""

    index: int  # in `spec.scheduledOverrides`
    override: ScheduledOverride
    period: Period


@dataclass(frozen=True)
class OverrideMatches:
    active: MatchedOverride | None  # the first active one in list order
    upcoming: MatchedOverride | None  # the one starting first (the earlier in the list on a tie)


def match_schedule(schedule: Schedule, now: datetime) -> ScheduleMatch:
    """The active and upcoming periods of `schedule` at `now` (ARC's `MatchSchedule`)."""
    if not schedule.frequency:
        return _match_one_off(schedule, now)
    if schedule.frequency not in _FREQUENCIES:
        raise AutoscalingError(_INVALID_FREQUENCY)
    period_end = one_period_later(schedule.frequency, now)
    duration = _elapsed(schedule.start, schedule.end)
    _check_duration(schedule.frequency, duration, _elapsed(now, period_end))
    rule = recurrence(schedule, not_before=now - duration)
    active_starts = rule.between(now - duration + TICK, now, inc=True)
    if len(active_starts) > 1:
        raise AutoscalingError(
            f"[bug] unexpected number of active overrides found: {active_starts}"
        )
    upcoming_starts = rule.between(now + TICK, period_end, inc=True)
    return ScheduleMatch(
        active=Period(active_starts[0], active_starts[0] + duration) if active_starts else None,
        upcoming=Period(upcoming_starts[0], upcoming_starts[0] + duration)
        if upcoming_starts
        else None,
    )


def schedule_of(override: ScheduledOverride, index: int) -> Schedule:
    """The times of `spec.scheduledOverrides[index]`; errors name the field, not its text."""
    where = f"spec.scheduledOverrides[{index}]"
    rule = override.recurrence_rule
    until = rule.until_time if rule else None
    frequency = (rule.frequency or "") if rule else ""
    if frequency and frequency not in _FREQUENCIES:
        raise AutoscalingError(f"{where}.recurrenceRule.frequency: {_INVALID_FREQUENCY}")
    return Schedule(
        start=_parse(override.start_time, f"{where}.startTime"),
        end=_parse(override.end_time, f"{where}.endTime"),
        frequency=frequency,
        until=_parse(until, f"{where}.recurrenceRule.untilTime") if until else None,
    )


def match_overrides(overrides: Sequence[ScheduledOverride], now: datetime) -> OverrideMatches:
    """ARC's loop over `spec.scheduledOverrides`: every override is validated, matching or not.

    The first active override wins even when it sets no `minReplicas`: list order is priority.
    """
    active: MatchedOverride | None = None
    upcoming: MatchedOverride | None = None
    for index, override in enumerate(overrides):
        match = match_schedule(schedule_of(override, index), now)
        if match.active is not None and active is None:
            active = MatchedOverride(index, override, match.active)
        if match.upcoming is not None and (
            upcoming is None or match.upcoming.start < upcoming.period.start
        ):
            upcoming = MatchedOverride(index, override, match.upcoming)
    return OverrideMatches(active, upcoming)


def active_override(
    overrides: Sequence[ScheduledOverride], now: datetime
) -> MatchedOverride | None:
    return match_overrides(overrides, now).active


def effective_min_replicas(
    spec_min_replicas: int | None, overrides: Sequence[ScheduledOverride], now: datetime
) -> int:
    return min_replicas_with(match_overrides(overrides, now), spec_min_replicas)


def min_replicas_with(matches: OverrideMatches, spec_min_replicas: int | None) -> int:
    """ARC's `getMinReplicas`: the active override's `minReplicas`, else the spec's (1 when
    unset or negative)."""
    active = matches.active
    if active is not None and active.override.min_replicas is not None:
        return active.override.min_replicas
    return spec_min_replicas_or_default(spec_min_replicas)


def scheduled_overrides_summary(
    spec_min_replicas: int | None, overrides: Sequence[ScheduledOverride], now: datetime
) -> str | None:
    return summarize_overrides(match_overrides(overrides, now), spec_min_replicas)


def summarize_overrides(matches: OverrideMatches, spec_min_replicas: int | None) -> str | None:
    """ARC's `status.scheduledOverridesSummary`, `min=<N> time=<T>`: the minimum that applies
    from the next change on, and when. None where ARC clears it (its status patch removes the
    field): no override active or upcoming, or the active one ends exactly when the next starts.
    """
    active, upcoming = matches.active, matches.upcoming
    if active is not None and (upcoming is None or active.period.end < upcoming.period.start):
        return _summary(spec_min_replicas_or_default(spec_min_replicas), active.period.end)
    if upcoming is not None and (active is None or active.period.end > upcoming.period.start):
        minimum = upcoming.override.min_replicas
        return None if minimum is None else _summary(minimum, upcoming.period.start)
    return None


def next_boundary(overrides: Sequence[ScheduledOverride], now: datetime) -> datetime | None:
    """The next moment, after `now`, at which any override starts or ends."""
    boundaries: list[datetime] = []
    for index, override in enumerate(overrides):
        schedule = schedule_of(override, index)
        active = match_schedule(schedule, now).active  # also validates the schedule
        if active is not None:
            boundaries.append(active.end)
        following = _next_start(schedule, now)
        if following is not None:
            boundaries.append(following)
    return min(boundaries, default=None)


def rfc3339(when: datetime) -> str:
    """Go's `time.RFC3339` layout: seconds precision, `Z` for UTC, the offset otherwise."""
    text = when.replace(microsecond=0).isoformat()
    return text.removesuffix("+00:00") + "Z" if text.endswith("+00:00") else text


def go_time_string(when: datetime) -> str:
    """Go's `time.Time.String()` of a time in UTC, as ARC (running in UTC) prints it."""
    utc = when.astimezone(UTC)
    fraction = f".{utc.microsecond:06d}".rstrip("0") if utc.microsecond else ""
    return f"{utc:%Y-%m-%d %H:%M:%S}{fraction} +0000 UTC"


def go_duration(duration: timedelta) -> str:
    """Go's `time.Duration.String()` for the whole and fractional seconds we handle."""
    if duration == timedelta(0):
        return "0s"
    sign = "-" if duration < timedelta(0) else ""
    micros = abs(duration) // TICK
    seconds, fraction = divmod(micros, 1_000_000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    second_text = f"{seconds}.{fraction:06d}".rstrip("0") if fraction else str(seconds)
    if hours:
        return f"{sign}{hours}h{minutes}m{second_text}s"
    if minutes:
        return f"{sign}{minutes}m{second_text}s"
    return f"{sign}{second_text}s"


def _match_one_off(schedule: Schedule, now: datetime) -> ScheduleMatch:
    period = Period(schedule.start, schedule.end)
    if now < schedule.start:
        return ScheduleMatch(active=None, upcoming=period)
    if now < schedule.end:
        return ScheduleMatch(active=period, upcoming=None)
    return ScheduleMatch(active=None, upcoming=None)


def _next_start(schedule: Schedule, now: datetime) -> datetime | None:
    """The first start strictly after `now`, however far: beyond the upcoming window when a
    monthly override skips short months."""
    if not schedule.frequency:
        return schedule.start if now < schedule.start else None
    following: datetime | None = recurrence(schedule, not_before=now).after(now, inc=False)
    return following


def one_period_later(frequency: str, now: datetime) -> datetime:
    """`now` plus one period, normalized like Go's `time.Date` (overflowing days roll over)."""
    period = _FREQUENCIES[frequency]
    month_index = now.month - 1 + period.months
    year = now.year + period.years + month_index // 12
    first_of_month = now.replace(year=year, month=month_index % 12 + 1, day=1)
    return first_of_month + timedelta(days=now.day - 1 + period.days)


def _elapsed(earlier: datetime, later: datetime) -> timedelta:
    # Aware datetimes sharing a tzinfo subtract as wall clocks; Go measures elapsed time.
    return later.astimezone(UTC) - earlier.astimezone(UTC)


def _check_duration(frequency: str, duration: timedelta, period: timedelta) -> None:
    if duration > period:
        raise AutoscalingError(
            f"override's duration {go_duration(duration)} must be equal to or shorter than "
            f"the duration implied by freq {json.dumps(frequency)} ({go_duration(period)})"
        )


def recurrence(schedule: Schedule, not_before: datetime) -> rrule.rrule:
    """The schedule's rule, for occurrences from `not_before` on.

    rrule walks every occurrence from its start: years of a daily override cost ~0.1 s a sync,
    and a monthly one from year 1 a second. Daily and weekly occurrences are whole steps apart
    on the start's wall clock, so the rule may start from a later occurrence (a step earlier
    than needed, for daylight-saving shifts). Monthly and yearly steps vary in length, but
    their occurrences are every date with the start's day of the month (and month) at its wall
    time, which rrule finds from any later start of the walk: the year before `not_before`.
    """
    frequency = _FREQUENCIES[schedule.frequency]
    start = schedule.start
    if frequency.days:
        if not_before > start:
            step = timedelta(days=frequency.days)
            start += max(_elapsed(start, not_before) // step - 1, 0) * step
        return rrule.rrule(frequency.rule, dtstart=start, until=schedule.until)
    walk_from = datetime(not_before.astimezone(start.tzinfo).year - 1, 1, 1, tzinfo=start.tzinfo)
    if walk_from <= start:
        return rrule.rrule(frequency.rule, dtstart=start, until=schedule.until)
    return rrule.rrule(
        frequency.rule,
        dtstart=walk_from,
        until=schedule.until,
        bymonth=start.month if frequency.years else None,
        bymonthday=start.day,
        byhour=start.hour,
        byminute=start.minute,
        bysecond=start.second,
    )


def spec_min_replicas_or_default(spec_min_replicas: int | None) -> int:
    if spec_min_replicas is not None and spec_min_replicas >= 0:
        return spec_min_replicas
    return DEFAULT_MIN_REPLICAS


def _summary(min_replicas: int, when: datetime) -> str:
    return f"min={min_replicas} time={go_time_string(when)}"


def _parse(text: str, field: str) -> datetime:
    try:
        return parse_time(text)
    except ValueError as error:
        raise AutoscalingError(f"{field} is not an RFC 3339 time") from error
