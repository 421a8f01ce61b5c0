"""A small, size-bounded, thread-safe memo (least recently used entries go first).

It only ever spares work: a value found here is the value the caller would compute itself from
the same key, so a miss, an eviction or an empty memo changes nothing but latency. Values are
shared between callers and threads and must be treated as read-only.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

import orjson

PLAIN_JSON = (
    orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
"""orjson options for a memo key: orjson would write datetimes, dataclasses and subclasses of
str, dict, ... as if they were plain JSON; with these it refuses them (`JSONEncodeError`), and
the caller computes without the memo."""

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(Generic[K, V]):
    """At most `max_entries` entries and, with `max_weight`, at most that much weight in all
    (what `put` is told an entry weighs, e.g. the length of the text it was worked out from):
    a count alone let a few huge entries hold hundreds of megabytes. An entry heavier than the
    whole budget is not kept."""

    def __init__(self, max_entries: int, max_weight: int | None = None) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._max = max_entries
        self._max_weight = max_weight
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._weights: dict[K, int] = {}
        self._weight = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def get_many(self, keys: Sequence[K | None]) -> list[V | None]:
        """`get` of each key (None for a None key), under one lock: a set's sync looks up
        thousands of children."""
        entries = self._entries
        with self._lock:
            values = [None if key is None else entries.get(key) for key in keys]
            for key, value in zip(keys, values, strict=True):
                if key is not None and value is not None:
                    entries.move_to_end(key)
        return values

    def put(self, key: K, value: V, weight: int = 0) -> None:
        with self._lock:
            if self._max_weight is not None and weight > self._max_weight:
                if self._entries.pop(key, None) is not None:
                    self._weight -= self._weights.pop(key, 0)
                return
            self._weight += weight - self._weights.pop(key, 0)
            if weight:
                self._weights[key] = weight
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self._max or (
                self._max_weight is not None and self._weight > self._max_weight
            ):
                evicted, _ = self._entries.popitem(last=False)
                self._weight -= self._weights.pop(evicted, 0)

    def get_or_compute(self, key: K, compute: Callable[[], V]) -> V:
        """The memoized value, computed (outside the lock) and stored on a miss."""
        value = self.get(key)
        if value is None:
            value = compute()
            self.put(key, value)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._weights.clear()
            self._weight = 0

    @property
    def weight(self) -> int:
        return self._weight

    def __len__(self) -> int:
        return len(self._entries)


class ObjectMemo(Generic[V]):
    """Values worked out from objects, looked up by the object itself (its `id`, checked with
    `is`). The request reader hands out the very object again for the same JSON text
    (`hooks.request_reader`), so a set's sync finds each unchanged child of thousands without
    reading its fields. An entry keeps its object alive, so its id cannot be taken by another;
    everything is forgotten past `max_entries`. Lock-free: each lookup and store is one dict
    operation, and an entry found is checked against its object."""

    def __init__(self, max_entries: int) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._max = max_entries
        self._entries: dict[int, tuple[object, V]] = {}

    def get(self, obj: object) -> V | None:
        entry = self._entries.get(id(obj))
        return entry[1] if entry is not None and entry[0] is obj else None

    def put(self, obj: object, value: V) -> None:
        if len(self._entries) >= self._max:
            self._entries.clear()
        self._entries[id(obj)] = (obj, value)

    def __len__(self) -> int:
        return len(self._entries)
