"""The emulator's memo of values worked out from stored objects, looked up by the object."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from arc_sim.metacontroller.identity_memo import IdentityMemo
from arc_sim.store import KubeObject

# (uid, value): a new stored object of that uid (a write), remembered with that value.
_WRITES = st.lists(st.tuples(st.sampled_from(["a", "b", "c", ""]), st.integers()), max_size=30)


@given(writes=_WRITES, limit=st.integers(1, 4))
def test_only_the_newest_object_of_a_uid_gives_its_value(
    writes: list[tuple[str, int]], limit: int
) -> None:
    memo: IdentityMemo[int] = IdentityMemo(limit)
    newest: dict[str, tuple[KubeObject, int]] = {}
    older: list[KubeObject] = []
    for uid, value in writes:
        obj: KubeObject = {"metadata": {"uid": uid, "name": "n"}}
        memo.put(obj, value)
        if uid in newest:
            older.append(newest[uid][0])
        if uid:
            newest[uid] = (obj, value)
        else:
            assert memo.get(obj) is None  # no uid: not remembered
    for obj, value in newest.values():
        assert memo.get(obj) in (value, None)  # None: forgotten past the limit
    for obj in older:
        assert memo.get(obj) is None
    # An equal object is another object: nothing is read from it.
    for obj, _ in newest.values():
        assert memo.get({"metadata": dict(obj["metadata"])}) is None
    assert len(memo) <= max(limit, 1) + 1
