"""A hook request's body, with the observed objects met before not decoded again.

Metacontroller sends a parent with every child at each change of any of them: a set of 3,000
Runners is a 6 MB request, sent again and again while the set scales, a Runner or two changed
each time. `RequestReader` splits a large body into its observed objects without decoding them
(msgspec's `Raw`), then decodes and checks only those whose exact text it has not met before;
the others come from a memo keyed by that text. Two requests with the same member text get the
same object, which handlers treat as read-only, as they do every request object.

The document is the one `read_json_object` gives for the same body, with the same depth limit.
The split is taken only for compact JSON, as Go's encoder (Metacontroller's) writes it: then
the lengths of the parts add up to the body's, which shows that every byte was read (a field
given twice would hide its first value). Whatever the split does not expect (whitespace,
another shape, a member that fails its checks, malformed JSON) is read the plain way, so the
error a client sees is the one its body has.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import msgspec
import orjson

from hooks.json_body import read_json_object, writable_at
from hooks.metacontroller import MEMBER_GROUPS, KubeObject, member_problem

log = logging.getLogger("arc_hooks.hooks")

SPLIT_ABOVE_BYTES = 64 * 1024
"""Smaller bodies are decoded whole: a Runner's own sync (about 10 KB) decodes as fast as it
splits."""

Groups = dict[str, dict[str, msgspec.Raw]] | None | msgspec.UnsetType
Part = msgspec.Raw | msgspec.UnsetType


class _Request(msgspec.Struct, forbid_unknown_fields=True):
    """Every field any of Metacontroller's hook requests has (sync and finalize of both
    controller kinds, customize); absent ones are UNSET, another field refuses the split."""

    controller: Part = msgspec.UNSET
    parent: Part = msgspec.UNSET
    object: Part = msgspec.UNSET
    children: Groups = msgspec.UNSET
    attachments: Groups = msgspec.UNSET
    related: Groups = msgspec.UNSET
    finalizing: Part = msgspec.UNSET


_SPLIT = msgspec.json.Decoder(_Request)

PART_LEVEL = 1
"""Containers around a top-level value: the document."""
MEMBER_LEVEL = 3
"""Containers around an observed object: the document, its groups, the group."""


@dataclass(frozen=True, slots=True)
class ReadRequest:
    document: dict[str, Any]
    members_checked: bool
    """Every object under `MEMBER_GROUPS` passed `member_problem` already."""


MEMBER_TEXT_BUDGET = 8 * 1024
"""JSON text kept per member on average at most (a Runner is about 2 KB, a RunnerSet member's
StatefulSet about 5 KB): a caller sending huge objects cannot make the memo hold more than
`max_members` times this, decoded objects aside (about four times their text)."""


class RequestReader:
    """Reads hook request bodies; keeps the `max_members` observed objects used last decoded,
    within `max_members * MEMBER_TEXT_BUDGET` bytes of their text. Called on the server's
    event loop only (it takes no lock).

    A request with more members than that (a set larger than `HOOK_MEMO_RUNNERS` allows for)
    evicts nothing: it keeps what is kept and adds members while there is room. Least recently
    used alone would evict each member before the set's next sync came back to it, and spare
    nothing. It is logged as a warning, once for each new largest request."""

    def __init__(self, max_members: int) -> None:
        if max_members < 1:
            raise ValueError("max_members must be at least 1")
        self._max = max_members
        self._max_bytes = max_members * MEMBER_TEXT_BUDGET
        self._bytes = 0
        self._members: OrderedDict[bytes, KubeObject] = OrderedDict()
        # Members of the request being read met so far: the newest this many entries.
        self._touched = 0
        self._oversized = False  # the request being read has more members than are kept
        self._largest_warned = max_members

    def read(self, body: bytes) -> ReadRequest:
        """The body's document (`json_body.UnreadableBody` when it is not one we can read)."""
        if len(body) > SPLIT_ABOVE_BYTES:
            self._touched = 0
            document = self._split(body)
            if document is not None:
                return ReadRequest(document, members_checked=True)
        return ReadRequest(read_json_object(body), members_checked=False)

    def __len__(self) -> int:
        return len(self._members)

    def _split(self, body: bytes) -> dict[str, Any] | None:
        try:
            request = _SPLIT.decode(body)
        except msgspec.DecodeError:  # not one JSON object of those fields (their types too)
            return None
        document: dict[str, Any] = {}
        length = 1  # the length of the document written compact, as Go and orjson write it
        for key in request.__struct_fields__:
            raw = getattr(request, key)
            if raw is msgspec.UNSET:
                continue
            if raw is None:  # a group given as null
                value, size = None, len(b"null")
            elif key in MEMBER_GROUPS:
                value, size = self._groups(raw)
            else:
                value, size = _decoded(memoryview(raw), PART_LEVEL), len(raw)
            if value is _UNREAD:
                return None
            document[key] = value
            length += _field_length(key) + size + 1  # the comma after, or the closing brace
        # Every byte was in a value decoded here, or the body is read whole: what is left over
        # is whitespace, or the first value of a field given twice, which nobody read.
        return document if length == len(body) else None

    def _groups(self, groups: dict[str, dict[str, msgspec.Raw]]) -> tuple[Any, int]:
        count = sum(map(len, groups.values()))
        self._oversized = count > self._max
        self._warn_if_larger_than_kept(count)
        decoded: dict[str, dict[str, KubeObject]] = {}
        length = _braces_and_commas(len(groups))
        for group_key, members in groups.items():
            objects: dict[str, KubeObject] = {}
            length += _field_length(group_key) + _braces_and_commas(len(members))
            for key, member in members.items():
                text = bytes(member)
                obj = self._member(text)
                if obj is None:
                    return _UNREAD, 0
                objects[key] = obj
                length += _field_length(key) + len(text)
            decoded[group_key] = objects
        return decoded, length

    def _member(self, text: bytes) -> KubeObject | None:
        members = self._members
        obj = members.get(text)
        if obj is not None:
            members.move_to_end(text)
            self._touched += 1
            return obj
        value = _decoded(text, MEMBER_LEVEL)
        if not isinstance(value, dict) or member_problem(value):
            return None  # the plain reading says what is wrong
        if self._oversized and (
            len(members) >= self._max or self._bytes + len(text) > self._max_bytes
        ):
            return value  # no room: what is kept stays for the next sync of the same set
        members[text] = value
        self._bytes += len(text)
        self._touched += 1
        while len(members) > self._max or self._bytes > self._max_bytes:
            # The oldest entry goes, unless this request met it too (then every entry is
            # this request's): the newest goes instead, and the others stay for its next sync.
            evicted = members.popitem(last=len(members) <= self._touched)
            self._bytes -= len(evicted[0])
            self._touched = min(self._touched, len(members))
        return value

    def _warn_if_larger_than_kept(self, count: int) -> None:
        if count > self._largest_warned:
            self._largest_warned = count
            log.warning(
                "a hook request carried %d objects, more than the %d kept decoded; "
                "HOOK_MEMO_RUNNERS below the Runners the cluster has makes each sync of a "
                "large set decode the rest again",
                count,
                self._max,
            )


_UNREAD: Any = object()


def _braces_and_commas(fields: int) -> int:
    """What an object of `fields` fields adds to its fields' lengths, written compact."""
    return 1 + fields if fields else 2


def _field_length(key: str) -> int:
    """A field's name and colon, written compact."""
    if key.isascii() and key.isprintable() and '"' not in key and "\\" not in key:
        return len(key) + 3  # nothing escaped: the quotes and the colon
    return len(orjson.dumps(key)) + 1


def _decoded(text: bytes | memoryview, level: int) -> Any:
    """`text` decoded, when it nests no deeper than the document may at `level` containers
    down (`json_body.writable_at`); `_UNREAD` otherwise (the document is then read the plain
    way)."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return _UNREAD
    return value if writable_at(value, level) else _UNREAD
