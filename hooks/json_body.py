"""A hook request's body: one JSON object, nested no deeper than its answer can be written.

orjson reads JSON nested 1,024 levels deep but writes only 254 levels, and an answer nests what
it copies from its request a level or two deeper (a RunnerSet's pod template goes into a
StatefulSet's spec). A request that could not be written back with `ANSWER_HEADROOM` more
levels around it is refused here, before any work, rather than failing after the handler has
run (and perhaps called GitHub).

Two ways to measure the depth, the same answer:

- a small body is decoded, then encoded again inside `ANSWER_HEADROOM` lists, as its answer
  would be, unless it holds too few brackets to nest that deep (most do);
- a large body (a set's sync with a thousand children) is decoded once, inside `WRAPPING`
  more lists, so that orjson's own read limit refuses exactly the bodies nested deeper than
  `MAX_NESTING`: no second pass over megabytes. Below `WRAP_ABOVE_BYTES` unwrapping the lists
  costs more than encoding the body again.

Whatever the wrapped decoding refuses, or finds to be more than one value, is decoded again as
it is, so the error a client sees is the one its body has.
"""

from __future__ import annotations

from typing import Any

import orjson

ORJSON_MAX_READ_DEPTH = 1024
ORJSON_MAX_WRITTEN_DEPTH = 254

ANSWER_HEADROOM = 8
"""How much deeper than in its request an answer may nest what it copies (a level or two
today), with room to spare."""

MAX_NESTING = ORJSON_MAX_WRITTEN_DEPTH - ANSWER_HEADROOM
"""The deepest request accepted. Kubernetes objects nest a few dozen levels at most."""

WRAPPING = ORJSON_MAX_READ_DEPTH - MAX_NESTING
WRAP_ABOVE_BYTES = 64 * 1024

_OPEN = b"[" * WRAPPING
_CLOSE = b"]" * WRAPPING


_NOT_DECODED: Any = object()


class UnreadableBody(ValueError):
    """Not a JSON object we can read and answer; the message says why, without the body."""


def read_json_object(body: bytes) -> dict[str, Any]:
    document = _decoded_wrapped(body) if len(body) > WRAP_ABOVE_BYTES else _NOT_DECODED
    if document is _NOT_DECODED:
        document = _decoded(body)
        _check_written_depth(document, body)
    if not isinstance(document, dict):
        raise UnreadableBody("request body must be a JSON object")
    return document


def _decoded(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise UnreadableBody(f"request body is not valid JSON: {error.msg}") from None


def _check_written_depth(document: Any, body: bytes) -> None:
    # Nesting needs an opening bracket per level: a body with fewer in all (inside strings too)
    # cannot nest too deep, and most cannot, so they are spared encoding the document again.
    if body.count(b"{") + body.count(b"[") <= MAX_NESTING:
        return
    if not writable_at(document, 0):
        raise UnreadableBody(f"request body nested deeper than {MAX_NESTING} levels")


def writable_at(value: Any, level: int) -> bool:
    """Whether `value`, found `level` containers down in a request, leaves the request
    writable inside `ANSWER_HEADROOM` more levels, as its answer would be."""
    wrapped: object = value
    for _ in range(ANSWER_HEADROOM + level):
        wrapped = [wrapped]
    try:
        orjson.dumps(wrapped)
    except orjson.JSONEncodeError:
        return False
    return True


def _decoded_wrapped(body: bytes) -> Any:
    """The document, checked for depth; `_NOT_DECODED` when the wrapped body is refused or is
    not exactly one value (`1,2` or an empty body would make a valid array)."""
    try:
        wrapped = orjson.loads(_OPEN + body + _CLOSE)
    except orjson.JSONDecodeError:
        return _NOT_DECODED
    for _ in range(WRAPPING):
        if type(wrapped) is not list or len(wrapped) != 1:
            return _NOT_DECODED
        wrapped = wrapped[0]
    return wrapped
