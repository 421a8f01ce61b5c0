"""Values worked out from stored objects, looked up by the object itself.

A stored object is never changed in place (every write makes a new one), so the same object
gives the same value. The lookup goes by the object's `id` and checks it with `is`, without
reading the object: a parent with thousands of children is synced again and again while few of
them change, and in a world of a million objects reading each child's fields is a cache miss
(for 1,790 children, 0.17 ms by identity against 0.55 ms by uid).
"""

from __future__ import annotations

from typing import Generic, TypeVar

from arc_sim.store import KubeObject

V = TypeVar("V")


class IdentityMemo(Generic[V]):
    """One value per object uid, for the newest object of that uid met; an entry keeps its
    object alive (so its id cannot be taken by another). Forgets everything past `limit`."""

    def __init__(self, limit: int = 100_000) -> None:
        self.limit = limit
        self._by_id: dict[int, tuple[KubeObject, V]] = {}
        self._id_of_uid: dict[str, int] = {}

    def get(self, obj: KubeObject) -> V | None:
        entry = self._by_id.get(id(obj))
        return entry[1] if entry is not None and entry[0] is obj else None

    def put(self, obj: KubeObject, value: V) -> None:
        """Remember `value` for `obj`, in place of what an older object of its uid had; an
        object without a uid is not remembered."""
        uid = (obj.get("metadata") or {}).get("uid")
        if not isinstance(uid, str) or not uid:
            return
        older = self._id_of_uid.get(uid)
        if older is not None:
            self._by_id.pop(older, None)
        elif len(self._id_of_uid) >= self.limit:
            self._by_id.clear()
            self._id_of_uid.clear()
        self._by_id[id(obj)] = (obj, value)
        self._id_of_uid[uid] = id(obj)

    def __len__(self) -> int:
        return len(self._by_id)
