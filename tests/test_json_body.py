"""A hook request's body: decoded once, refused when it is not one JSON object or nests deeper
than its answer could be written, whichever way its depth is measured (hooks/json_body.py)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hooks.json_body import (
    ANSWER_HEADROOM,
    MAX_NESTING,
    WRAP_ABOVE_BYTES,
    UnreadableBody,
    read_json_object,
)
from tests.hook_app import hook_client, hook_settings
from tests.test_hook_inputs import nested

PADDING = WRAP_ABOVE_BYTES + 1


def reference(body: bytes) -> dict[str, Any] | None:
    """What a body must read as: decoded as it is, and encodable inside `ANSWER_HEADROOM` more
    levels, as its answer would be; None when it is refused."""
    try:
        document = orjson.loads(body)
        orjson.dumps(_wrap(document))
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return None
    return document if isinstance(document, dict) else None


def _wrap(document: Any) -> Any:
    for _ in range(ANSWER_HEADROOM):
        document = [document]
    return document


def read(body: bytes) -> dict[str, Any] | None:
    try:
        return read_json_object(body)
    except UnreadableBody:
        return None


FRAGMENTS = st.one_of(
    st.sampled_from(
        [b"", b"1,2", b"],[", b"{}", b'{"a":1}', b"[", b"]", b"{", b"nul", b"1", b'"s"', b"[1]"]
    ),
    st.builds(
        nested,
        st.sampled_from([1, MAX_NESTING - 2, MAX_NESTING - 1, MAX_NESTING, MAX_NESTING + 1, 1100]),
        st.sampled_from(["list", "object"]),
    ),
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
        max_leaves=8,
    ).map(orjson.dumps),
)


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    """A fragment as the whole body, or as a value inside an object, small or padded past
    `WRAP_ABOVE_BYTES` (by whitespace, or by a long string beside it)."""
    fragment = draw(FRAGMENTS)
    place = draw(st.sampled_from(["alone", "in an object", "beside a long string", "padded"]))
    if place == "in an object":
        return b'{"v":' + fragment + b"}"
    if place == "beside a long string":
        return b'{"pad":"' + b"x" * PADDING + b'","v":' + fragment + b"}"
    if place == "padded":
        return b" " * PADDING + fragment + b"\n"
    return fragment


@given(bodies())
@settings(max_examples=400, deadline=None)
def test_any_body_reads_as_decoding_and_encoding_it_again_would(body: bytes) -> None:
    assert read(body) == reference(body)


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("shape", ["list", "object"])
def test_the_deepest_body_accepted_is_max_nesting_levels(size: str, shape: str) -> None:
    pad = b"x" * (PADDING if size == "large" else 1)
    for depth, accepted in ((MAX_NESTING - 1, True), (MAX_NESTING, False)):
        # The object around the value is one level more.
        body = b'{"pad":"' + pad + b'","v":' + nested(depth, shape) + b"}"
        if accepted:
            assert read_json_object(body)["pad"] == pad.decode()
        else:
            with pytest.raises(UnreadableBody, match=f"nested deeper than {MAX_NESTING} levels"):
                read_json_object(body)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b" " * PADDING + b"1,2", "not valid JSON"),
        (b" " * PADDING, "not valid JSON"),
        (b" " * PADDING + b"[1]", "must be a JSON object"),
        (b'{"pad":"' + b"x" * PADDING + b'"', "not valid JSON"),
    ],
    ids=["two values", "only whitespace", "an array", "unterminated"],
)
def test_a_large_body_that_is_not_one_object_gets_its_own_error(body: bytes, message: str) -> None:
    with pytest.raises(UnreadableBody, match=message) as refused:
        read_json_object(body)
    assert "xxxx" not in str(refused.value)  # the body is never echoed


def test_a_large_deep_request_is_refused_with_a_400_before_any_work() -> None:
    from hooks.app import create_app
    from hooks.clock import ManualClock
    from tests.in_memory_github import InMemoryGitHub

    clock = ManualClock()
    github = InMemoryGitHub(clock)
    app = create_app(hook_settings(), github=github, clock=clock)
    children = {"Pod.v1": {f"p{i}": {"metadata": {"name": f"p{i}"}} for i in range(2000)}}
    parent: dict[str, Any] = {"apiVersion": "actions.summerwind.dev/v1alpha1", "kind": "Runner"}
    parent |= {"metadata": {"name": "r", "namespace": "default"}, "spec": {"deep": None}}
    request = {"controller": {}, "parent": parent, "children": children, "finalizing": False}
    body = orjson.dumps(request).replace(b'"deep":null', b'"deep":' + nested(300, "list"))
    assert len(body) > WRAP_ABOVE_BYTES
    with hook_client(app) as client:
        response = client.post("/sync/runner", content=body)
    assert response.status_code == 400
    assert f"nested deeper than {MAX_NESTING} levels" in response.text
    assert github.calls == []
