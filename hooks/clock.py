"""Time as an injected dependency: the logic never reads the wall clock itself."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that moves only when told to: for tests and the simulated world."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)

    def set(self, when: datetime) -> None:
        self._now = when


def format_time(when: datetime) -> str:
    """RFC 3339 with second precision, as Kubernetes writes metav1.Time."""
    t = when if when.tzinfo is UTC else when.astimezone(UTC)
    # Formatted by hand: several times per hook call, strftime costs 3x this.
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}Z"


def parse_time(text: str) -> datetime:
    """An RFC 3339 time, as given (its offset kept). ValueError for one that UTC cannot
    write (`format_time`): a valid text such as 9999-12-31T23:00:00-14:00 is past year 9999
    there."""
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if not parsed.tzinfo:
        return parsed.replace(tzinfo=UTC)
    if parsed.tzinfo is not UTC:
        try:
            parsed.astimezone(UTC)
        except OverflowError as error:
            raise ValueError(f"{text!r} is outside the years a UTC time can have") from error
    return parsed


def parse_optional_time(text: str | None) -> datetime | None:
    """A timestamp that only informs: absent or unreadable, it is None."""
    if not text:
        return None
    try:
        return parse_time(text)
    except ValueError:
        return None
