"""Go durations (`30m`, `1h30m`, `90s`), as Kubernetes serializes ARC's `metav1.Duration` fields."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

_NANOSECONDS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 MICRO SIGN
    "μs": 1_000,  # U+03BC GREEK SMALL LETTER MU
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)([a-zµμ]+)")  # one way to match: linear in the text
_MAX_NANOSECONDS = 2**63 - 1  # Go's time.Duration is an int64 of nanoseconds


def parse_go_duration(text: str) -> timedelta:
    """What Go's `time.ParseDuration` accepts, as a timedelta (truncated to microseconds).

    Raises ValueError for anything Go rejects: a missing or unknown unit, an empty string, a
    value beyond Go's range.
    """
    sign, rest = 1, text
    if rest[:1] in ("-", "+"):
        sign, rest = (-1 if rest[0] == "-" else 1), rest[1:]
    if rest == "0":
        return timedelta(0)
    if not rest:
        raise ValueError(f"invalid duration {_shown(text)}")
    total, position = 0, 0
    while position < len(rest):
        match = _PART.match(rest, position)
        if match is None or match.group(2) not in _NANOSECONDS:
            raise ValueError(f"invalid duration {_shown(text)}")
        total += int(Decimal(match.group(1)) * _NANOSECONDS[match.group(2)])
        position = match.end()
    if total > _MAX_NANOSECONDS:
        raise ValueError(f"invalid duration {_shown(text)}: out of range")
    return sign * timedelta(microseconds=total // 1000)


def _shown(text: str) -> str:
    """The text as an error quotes it: a spec may hold megabytes of digits."""
    return repr(text if len(text) <= 40 else text[:40] + "...")
