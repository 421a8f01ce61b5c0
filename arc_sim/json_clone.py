"""Deep copies of JSON documents, as the simulated API server hands out and takes in.

A round trip through orjson copies a Kubernetes object three to five times faster than
`copy.deepcopy`, and the store copies every object it reads or writes. What orjson refuses
(datetimes, dataclasses, keys that are not strings, integers beyond 64 bits, nesting past 254
levels) is copied by `copy.deepcopy` instead. Some values come back as JSON has them: tuples as
lists, NaN as None, enum members and UUIDs as their plain values. The objects copied here are
decoded JSON and YAML, and hold none of these.
"""

from __future__ import annotations

import copy
from typing import TypeVar

import orjson

from hooks.memo import PLAIN_JSON

T = TypeVar("T")


def clone(value: T) -> T:
    """A deep copy of `value`; equal to it, sharing nothing mutable with it."""
    try:
        copied: T = orjson.loads(orjson.dumps(value, option=PLAIN_JSON))
    except orjson.JSONEncodeError:
        return copy.deepcopy(value)
    return copied
