"""Large hook requests split into their observed objects, each decoded once per exact text
(hooks/request_reader.py): the same document as reading the body whole, the same refusals, the
same answers in a whole simulated world, and shared objects nobody changes."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arc_sim.world import World
from hooks import request_reader
from hooks.json_body import MAX_NESTING, UnreadableBody
from hooks.metacontroller import MEMBER_GROUPS, CompositeHookRequest, member_problem
from hooks.request_reader import MEMBER_TEXT_BUDGET, SPLIT_ABOVE_BYTES, RequestReader
from tests.hook_app import hook_client, hook_settings
from tests.sim_scenarios import scenario
from tests.test_hook_inputs import nested
from tests.test_json_body import FRAGMENTS, reference

PAD = b"x" * (SPLIT_ABOVE_BYTES + 1)


def read(reader: RequestReader, body: bytes) -> dict[str, Any] | None:
    try:
        return reader.read(body).document
    except UnreadableBody:
        return None


def _decodes(text: bytes) -> bool:
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return True


NAMES = st.text(alphabet="abc-\u00e9", min_size=1, max_size=4)
VALUES = FRAGMENTS.filter(_decodes)


@st.composite
def members(draw: st.DrawFn) -> bytes:
    """An observed object's text: mostly well formed, sometimes not an object the API server
    serves (no name, labels that are not strings, a spec that is a list), sometimes deep."""
    metadata: dict[str, Any] = {"name": draw(NAMES), "resourceVersion": draw(st.sampled_from("12"))}
    shape = draw(st.sampled_from(["good"] * 30 + ["nameless", "bad labels", "bad spec"]))
    if shape == "nameless":
        del metadata["name"]
    if shape == "bad labels":
        metadata["labels"] = {"a": 1}
    obj: dict[str, Any] = {"kind": "Runner", "metadata": metadata, "spec": {"v": None}}
    if shape == "bad spec":
        obj["spec"] = []
    return orjson.dumps(obj).replace(b'"v":null', b'"v":' + draw(VALUES))


@st.composite
def groups(draw: st.DrawFn) -> bytes:
    entries = draw(st.lists(st.tuples(NAMES, members()), min_size=1, max_size=4))
    inner = b",".join(orjson.dumps(key) + b":" + text for key, text in entries)
    return b'{"Runner.actions.summerwind.dev/v1alpha1":{' + inner + b"}}"


@st.composite
def hook_bodies(draw: st.DrawFn) -> bytes:
    """A request of Metacontroller's shape, or not quite (a group that is null or a list, a
    parent that is deep, a value that is not JSON), padded past `SPLIT_ABOVE_BYTES`."""
    parts = [b'"controller":{"pad":"' + PAD + b'"}']
    keys = draw(st.lists(st.sampled_from([*sorted(MEMBER_GROUPS), "parent", "finalizing"])))
    keys = list(dict.fromkeys(keys))
    if keys and draw(st.sampled_from([False] * 3 + [True])):
        keys.append(draw(st.sampled_from(keys)))  # a field twice
    if draw(st.sampled_from([False] * 3 + [True])):
        keys.append("x")  # not a field of any hook request
    for key in keys:
        if key in MEMBER_GROUPS:
            odd = st.sampled_from([b"null", b"[]", b"{}", b'{"g":[]}'])
            value = draw(st.one_of(*[groups()] * 5, odd))
        else:
            value = draw(st.one_of(VALUES, VALUES, FRAGMENTS))
        parts.append(orjson.dumps(key) + b":" + value)
    parts = draw(st.permutations(parts))
    body = b"{" + b",".join(parts) + b"}" + draw(st.sampled_from([b""] * 9 + [b" \n", b"1", b"}"]))
    if draw(st.sampled_from([False] * 5 + [True])):  # with a space, not as Go writes it
        at = draw(st.sampled_from([b'":', b"},", b"{"]))
        body = body.replace(at, at + b" ", 1)
    return body


SHARED = RequestReader(200)


@given(st.one_of(hook_bodies(), FRAGMENTS.map(lambda f: b" " * len(PAD) + f)))
@settings(max_examples=500, deadline=None)
def test_any_large_body_reads_as_reading_it_whole_would(body: bytes) -> None:
    # Twice through one reader: decoded, then from the memo.
    for _ in range(2):
        assert read(SHARED, body) == reference(body)
    if reference(body) is None:
        return
    read_request = SHARED.read(body)
    if read_request.members_checked:
        for key in MEMBER_GROUPS & read_request.document.keys():
            for group in (read_request.document[key] or {}).values():
                assert all(member_problem(obj) == "" for obj in group.values())


def _body_with(
    members_text: dict[str, bytes], parent: bytes = b'{"metadata":{"name":"p"}}'
) -> bytes:
    inner = b",".join(orjson.dumps(k) + b":" + v for k, v in members_text.items())
    return (
        b'{"controller":{"pad":"'
        + PAD
        + b'"},"parent":'
        + parent
        + b',"children":{"Runner.v1":{'
        + inner
        + b"}}}"
    )


def _runner(name: str, version: str, spec: bytes = b"{}") -> bytes:
    return b'{"metadata":{"name":"%s","resourceVersion":"%s"},"spec":%s}' % (
        name.encode(),
        version.encode(),
        spec,
    )


TINY = RequestReader(3)


@given(st.lists(hook_bodies(), min_size=1, max_size=4))
@settings(max_examples=200, deadline=None)
def test_a_memo_smaller_than_the_requests_reads_them_as_reading_them_whole_would(
    bodies: list[bytes],
) -> None:
    # Requests of more members than it keeps: its eviction of the newest or the oldest.
    for body in bodies * 2:
        assert read(TINY, body) == reference(body)
        assert len(TINY) <= 3
        assert TINY._bytes == sum(map(len, TINY._members)) <= 3 * MEMBER_TEXT_BUDGET


def test_a_member_met_before_is_the_same_object_and_a_changed_one_is_decoded_anew() -> None:
    reader = RequestReader(10)
    first = reader.read(_body_with({"a": _runner("a", "1"), "b": _runner("b", "1")}))
    second = reader.read(_body_with({"a": _runner("a", "1"), "b": _runner("b", "2")}))
    before, after = (r.document["children"]["Runner.v1"] for r in (first, second))
    assert first.members_checked and second.members_checked
    assert after["a"] is before["a"]
    assert after["b"] is not before["b"]
    assert after["b"]["metadata"]["resourceVersion"] == "2"
    assert len(reader) == 3


def test_the_memo_keeps_at_most_its_size_and_its_text_budget() -> None:
    reader = RequestReader(5)
    for version in range(20):
        reader.read(_body_with({"a": _runner("a", str(version))}))
    assert len(reader) == 5
    huge = b'{"d":"' + b"y" * (3 * MEMBER_TEXT_BUDGET) + b'"}'
    body = _body_with({"h": _runner("h", "1", huge), "a": _runner("a", "0")})
    first = reader.read(body).document["children"]["Runner.v1"]
    assert reader.read(body).document["children"]["Runner.v1"] == first  # read all the same
    assert sum(map(len, reader._members)) <= 5 * MEMBER_TEXT_BUDGET
    assert len(reader) >= 1


def test_a_request_larger_than_the_memo_keeps_what_it_met_first_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Least recently used alone would evict each member before the next sync of the same set
    # comes back to it: nothing would ever be found again.
    reader = RequestReader(4)
    names = "abcdef"
    body = _body_with({name: _runner(name, "1") for name in names})
    with caplog.at_level("WARNING", logger="arc_hooks.hooks"):
        first = reader.read(body).document["children"]["Runner.v1"]
        second = reader.read(body).document["children"]["Runner.v1"]
    assert [second[n] is first[n] for n in names] == [True] * 4 + [False] * 2
    assert second == first
    assert len(reader) == 4
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == [
        "a hook request carried 6 objects, more than the 4 kept decoded; HOOK_MEMO_RUNNERS "
        "below the Runners the cluster has makes each sync of a large set decode the rest again"
    ]
    # Another request's members still take the place of those it did not meet.
    alone = _body_with({"g": _runner("g", "1")})
    other = reader.read(alone).document["children"]["Runner.v1"]
    assert reader.read(alone).document["children"]["Runner.v1"]["g"] is other["g"]
    assert len(reader) == 4
    # And the large set finds again what was not taken (found in review: each member it did
    # not find evicted one it was to find later, down the whole set).
    third = reader.read(body).document["children"]["Runner.v1"]
    assert [third[n] is second[n] for n in names] == [False] + [True] * 3 + [False] * 2


@pytest.mark.parametrize("where", ["member", "parent"])
def test_the_depth_limit_is_the_one_for_the_whole_body(where: str) -> None:
    reader = RequestReader(10)
    outcomes = []
    for depth in range(MAX_NESTING - 10, MAX_NESTING + 2):
        deep = b'{"d":' + nested(depth, "list") + b"}"
        if where == "member":
            body = _body_with({"a": _runner("a", "1", deep)})
        else:
            body = _body_with(
                {"a": _runner("a", "1")}, b'{"metadata":{"name":"p"},"spec":%s}' % deep
            )
        expected = reference(body)
        assert read(reader, body) == expected
        outcomes.append(expected is not None)
    assert outcomes[0] and not outcomes[-1]  # the limit lies within the depths tried
    with pytest.raises(UnreadableBody, match=f"nested deeper than {MAX_NESTING} levels"):
        reader.read(body)


def test_a_bad_member_of_a_large_request_gets_the_error_a_small_one_gets() -> None:
    from hooks.app import create_app
    from hooks.clock import ManualClock
    from tests.in_memory_github import InMemoryGitHub

    clock = ManualClock()
    github = InMemoryGitHub(clock)
    app = create_app(hook_settings(), github=github, clock=clock)
    parent = b'{"apiVersion":"actions.summerwind.dev/v1alpha1","kind":"RunnerReplicaSet",'
    parent += b'"metadata":{"name":"rs","namespace":"default","uid":"u"},"spec":{"replicas":1}}'
    bad = b'{"metadata":{"name":"b","labels":{"x":1}}}'
    answers = []
    with hook_client(app) as client:
        for size in ("small", "large"):
            body = _body_with({"b": bad}, parent)
            if size == "small":
                body = body.replace(PAD, b"")
            assert (len(body) > SPLIT_ABOVE_BYTES) == (size == "large")
            response = client.post("/sync/runnerreplicaset", content=body)
            answers.append((response.status_code, response.json()))
    assert answers[0] == answers[1]
    assert answers[0][0] == 422
    assert "member 'b'.metadata.labels must map strings to strings" in answers[0][1]["error"]
    assert github.calls == []


def test_checked_members_validate_as_they_would_unchecked() -> None:
    reader = RequestReader(10)
    body = _body_with({"a": _runner("a", "1")})
    read_request = reader.read(body)
    assert read_request.members_checked
    checked = CompositeHookRequest.model_validate(
        read_request.document, context={"members_checked": True}
    )
    assert checked == CompositeHookRequest.model_validate(orjson.loads(body))


SPLIT_WORLDS = ["deployment-rollout-during-long-jobs", "busy-metric-with-webhook-reservations"]


@pytest.mark.parametrize("name", SPLIT_WORLDS)
def test_a_world_whose_every_request_is_split_runs_as_one_read_whole(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every hook request of a scenario split (not only large ones): the same run, call for
    call; and no handler changed an object the memo shares between requests."""
    whole = World(scenario(name)).run().to_json()
    monkeypatch.setattr(request_reader, "SPLIT_ABOVE_BYTES", 0)
    world = World(scenario(name))
    split = world.run().to_json()
    for summary in (whole, split):
        del summary["wallSeconds"]
    assert split == whole
    for app in world.apps:
        members = app.state.request_reader._members
        assert len(members) > 0
        for text, obj in members.items():
            assert obj == orjson.loads(text)


@given(st.text())
def test_a_field_name_takes_the_length_its_compact_json_has(key: str) -> None:
    assert request_reader._field_length(key) == len(orjson.dumps(key) + b":")
