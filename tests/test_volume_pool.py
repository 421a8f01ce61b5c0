"""The RunnerSet volume pool's rule (hooks/runnerset/volume_pool.py) over any claims and slots."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hooks.runnerset.statefulset import VOLUME_SLOT_LABEL
from hooks.runnerset.volume_pool import pool_size, pooled_claims


def claim(name: str, slot: str | None) -> dict[str, object]:
    labels = {} if slot is None else {VOLUME_SLOT_LABEL: slot}
    return {"metadata": {"name": name, "labels": labels}}


slots = st.one_of(st.none(), st.integers(0, 40).map(str), st.sampled_from(["", "x", "-1", "٣"]))


@given(st.lists(slots, max_size=30), st.sets(st.integers(0, 40)), st.none() | st.integers(1, 20))
def test_held_slots_low_slots_and_unreadable_ones_stay(
    claim_slots: list[str | None], held: set[int], size: int | None
) -> None:
    claims = [claim(f"c{i}", slot) for i, slot in enumerate(claim_slots)]

    kept = pooled_claims(claims, held, size)

    assert kept == [c for c in claims if c in kept]  # order kept
    for c, slot in zip(claims, claim_slots, strict=True):
        number = int(slot) if slot is not None and slot.isascii() and slot.isdigit() else None
        expected = size is None or number is None or number < size or number in held
        assert (c in kept) == expected


def test_pool_size_is_twice_the_most_runners_or_everything() -> None:
    hra = {"spec": {"maxReplicas": 5}}
    assert pool_size(hra, 1, 0) == 10
    assert pool_size(None, 3, 0) == 6
    assert pool_size(None, None, 0) == 2  # ARC's default of one replica
    assert pool_size(None, 1, 7) == 14  # never below the runners it has now
    assert pool_size(None, 0, 0) is None
    assert pool_size({"spec": {"maxReplicas": 0}}, 3, 0) is None
    assert pool_size({"spec": {}}, 3, 0) is None
    assert pool_size({"spec": {"maxReplicas": True}}, 3, 0) is None
