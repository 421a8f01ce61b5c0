"""What the hooks' answers put on the wire, whatever the handlers computed."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from hooks.metacontroller import (
    MAX_RESYNC_AFTER_SECONDS,
    CompositeHookResponse,
    DecoratorHookResponse,
)


@given(seconds=st.none() | st.floats(allow_nan=True, allow_infinity=True))
def test_an_answer_asks_for_a_finite_wait_of_at_most_a_day(seconds: float | None) -> None:
    """Waits follow from observed timestamps, which may be years away or unreadable; what goes
    to Metacontroller is absent or a finite number of seconds it can turn into a Duration."""
    for response in (
        CompositeHookResponse(resync_after_seconds=seconds),
        DecoratorHookResponse(resync_after_seconds=seconds),
    ):
        wire = response.to_wire()
        if seconds is None or not seconds > 0:
            assert "resyncAfterSeconds" not in wire
            continue
        sent = wire["resyncAfterSeconds"]
        assert math.isfinite(sent) and 0 <= sent <= MAX_RESYNC_AFTER_SECONDS
        assert sent == round(min(seconds, MAX_RESYNC_AFTER_SECONDS), 3)
