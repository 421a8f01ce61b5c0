"""The virtual-time event loop: ordering, cancellation, determinism."""

from __future__ import annotations

from arc_sim.events import EventLoop
from hooks.clock import ManualClock


def test_events_run_in_time_then_insertion_order_and_move_the_clock() -> None:
    loop = EventLoop(ManualClock())
    start = loop.now
    seen: list[tuple[str, float]] = []

    def mark(label: str) -> None:
        seen.append((label, (loop.now - start).total_seconds()))

    loop.call_later(5, lambda: mark("b"))
    loop.call_later(1, lambda: mark("a"))
    loop.call_later(5, lambda: mark("c"))

    def schedule_nested() -> None:
        loop.call_later(1, lambda: mark("nested"))

    loop.call_later(1, schedule_nested)
    cancelled = loop.call_later(3, lambda: mark("never"))
    cancelled.cancel()

    loop.run_for(10)

    assert seen == [("a", 1), ("nested", 2), ("b", 5), ("c", 5)]
    assert (loop.now - start).total_seconds() == 10
    assert loop.pending() == 0


def test_same_seed_same_random_choices() -> None:
    first = EventLoop(ManualClock(), seed=7).rng.random()
    second = EventLoop(ManualClock(), seed=7).rng.random()
    assert first == second
