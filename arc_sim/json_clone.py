"""Deep copies of JSON documents, as the simulated API server hands out and takes in.

A round trip through orjson copies a Kubernetes object three to five times faster than
`copy.deepcopy`, and the store copies every object it reads or writes. Anything orjson would
change on the way (datetimes, dataclasses, subclasses of str or dict, integers beyond 64 bits,
nesting past 254 levels) is refused by it and copied by `copy.deepcopy` instead. Tuples come
back as lists and a NaN as None, as JSON has them; the objects copied here hold neither.
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
