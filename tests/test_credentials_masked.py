"""A token pasted into the wrong field is not shown back: status, pod annotations, events and
logs mask anything shaped like a GitHub token or a URL's credentials, wherever a message quotes
it (a scope in a GitHub error, a key in a field's problem)."""

from __future__ import annotations

import copy
import logging

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hooks.children import MAX_PROBLEM_CHARACTERS, MAX_PROBLEMS_SHOWN, problems_message
from hooks.clock import ManualClock
from hooks.events import LifecycleEvent, event_object
from hooks.github.port import GitHubError
from hooks.lifecycle.graceful_stop import read_stop, stop_annotation
from hooks.logs import JsonFormatter
from hooks.redaction import MASK, mask_credentials, without_credentials
from hooks.resources.runner import GracefulStopStatus
from tests.in_memory_github import InMemoryGitHub
from tests.test_hook_inputs import SEEDS, check_answer, hook_server, post

TOKEN = "ghp_Zq7Lk2Vb9Xw4Rt1Yp6Nm3Hs8Jd5Fg0Ca2Ee4"
PAT = "github_pat_11ABCDEFG0" + "a" * 12 + "_" + "B7" * 29 + "x"
URL_SECRET = "x-access-token:s3cr3tValue"

TOKENS = st.sampled_from(
    [
        TOKEN,
        PAT,
        "ghs_" + "A" * 36,
        "gho_" + "b1" * 18,
        "ghu_" + "Cd9" * 12,
        "ghr_" + "0" * 40,
    ]
)
TEXT = st.text(st.characters(codec="utf-8", exclude_characters="_"), max_size=20)


@given(before=TEXT, token=TOKENS, after=TEXT)
def test_a_token_anywhere_in_text_is_masked(before: str, token: str, after: str) -> None:
    masked = mask_credentials(f"{before} {token} {after}")

    assert token not in masked and MASK in masked


@given(
    secret=st.text(
        st.characters(exclude_categories=("Z", "C"), exclude_characters='/@"'),
        min_size=1,
        max_size=20,
    )
)
def test_the_credentials_of_a_url_are_masked(secret: str) -> None:
    masked = mask_credentials(f"list runners in /orgs/https://{secret}@github.com/acme: 404")

    assert masked == f"list runners in /orgs/https://{MASK}@github.com/acme: 404"


@given(
    value=st.recursive(
        st.text(max_size=8) | st.integers(-(2**63), 2**63 - 1), lambda inner: st.lists(inner)
    )
)
def test_values_without_credentials_are_the_same_object(value: object) -> None:
    text = orjson.dumps(value).decode()
    if mask_credentials(text) == text:
        assert without_credentials(value) is value


def test_nested_values_are_masked_keys_included() -> None:
    value = {"conditions": [{"message": f"in {TOKEN}"}], TOKEN: 1}

    masked = without_credentials(value)

    assert TOKEN not in orjson.dumps(masked).decode()
    assert masked == {"conditions": [{"message": f"in {MASK}"}], MASK: 1}
    assert value == {"conditions": [{"message": f"in {TOKEN}"}], TOKEN: 1}, "not changed"


@pytest.mark.parametrize(
    "organization",
    [TOKEN, f"https://{TOKEN}@github.com/acme", f"https://{URL_SECRET}@github.com/acme"],
)
@pytest.mark.parametrize("path", ["/finalize/runnerset", "/sync/runnerset"])
def test_a_github_error_quoting_the_scope_shows_no_credentials(
    organization: str, path: str
) -> None:
    """GitHub's answer names the scope asked about, which is what the spec says: a token pasted
    as the organization would be quoted back in status."""
    github = InMemoryGitHub(ManualClock())
    github.list_error = GitHubError(f"list runners in /orgs/{organization}: HTTP 404: Not Found")
    request = copy.deepcopy(SEEDS[path][0])
    request["parent"]["spec"]["organization"] = organization
    with hook_server(github=github) as (client, errors):
        response = post(client, path, orjson.dumps(request))
        check_answer(path, request, response, errors)

    status = orjson.dumps(response.json()["status"]).decode()
    assert "HTTP 404" in status or "organization" in status
    assert TOKEN not in status and "s3cr3tValue" not in status


def test_a_problem_quoting_a_key_shows_no_token() -> None:
    request = copy.deepcopy(SEEDS["/sync/runner"][0])
    request["parent"]["spec"]["resources"] = {"limits": {TOKEN: "1"}}
    with hook_server() as (client, errors):
        response = post(client, "/sync/runner", orjson.dumps(request))
        check_answer("/sync/runner", request, response, errors)

    status = response.json()["status"]
    valid = next(c for c in status["conditions"] if c["type"] == "Valid")
    assert valid["status"] == "False" and "resources.limits" in valid["message"]
    assert TOKEN not in orjson.dumps(status).decode()


def test_an_event_quoting_a_token_is_masked() -> None:
    involved = {"kind": "Runner", "metadata": {"name": "r", "namespace": "ci", "uid": "u"}}
    event = LifecycleEvent("FailedUpdateRegistrationToken", f"failed in /orgs/{TOKEN}", True)

    written = event_object(involved, event, ManualClock().now())

    assert TOKEN not in written["message"] and MASK in written["message"]


def test_a_log_line_quoting_url_credentials_is_masked() -> None:
    record = logging.makeLogRecord({"msg": f"GET https://{URL_SECRET}@github.com/x failed"})

    line = JsonFormatter().format(record)

    assert "s3cr3tValue" not in line and MASK in line


@pytest.mark.parametrize("glued", [f"acme_{TOKEN}", f"x-{TOKEN}-y", f"/orgs/{TOKEN}/x"])
def test_a_token_glued_to_a_word_is_masked(glued: str) -> None:
    assert "Zq7Lk2Vb9Xw4Rt1Yp6Nm3" not in mask_credentials(glued)


def test_a_long_key_is_masked_before_it_is_cut_short() -> None:
    request = copy.deepcopy(SEEDS["/sync/runner"][0])
    request["parent"]["spec"]["resources"] = {"limits": {"k" * 17 + "-" + TOKEN: "1"}}
    with hook_server() as (client, errors):
        response = post(client, "/sync/runner", orjson.dumps(request))
        check_answer("/sync/runner", request, response, errors)

    assert "ghp_Zq7" not in response.text


def test_a_stop_record_quoting_a_token_is_masked() -> None:
    """The record goes on a RunnerSet's StatefulSets and on pods, as annotations."""
    stop = GracefulStopStatus(
        reason="ScaleDown",
        started_at="2026-01-01T00:00:00Z",
        message=f"500 on DELETE /orgs/{TOKEN}/actions/runners/1",
    )

    recorded = stop_annotation(stop)

    assert TOKEN not in recorded
    assert read_stop(recorded) == stop.model_copy(
        update={"message": f"500 on DELETE /orgs/{MASK}/actions/runners/1"}
    )


@given(
    before=st.text(max_size=3),
    separator=st.characters(exclude_categories=("L", "N", "Cs"), exclude_characters="_"),
    token=TOKENS,
)
def test_a_token_after_any_character_is_masked_as_text_json_and_repr(
    before: str, separator: str, token: str
) -> None:
    """Found by the hostile-input fuzzer: after a newline, a tab or a no-break space, a token
    passed through status, refusals and the JSON log in clear, each of which masks the text
    written as JSON or quoted with `repr`, where the character is an escape ending in a letter
    or digit (`\\n`, `\\u00a0`)."""
    text = f"{before}{separator}{token}"
    for written in (text, orjson.dumps(text).decode(), repr(text), ascii(text)):
        masked = mask_credentials(written)
        assert token not in masked and token[4:] not in masked, written
    assert token not in orjson.dumps(without_credentials({"message": text})).decode()


@pytest.mark.parametrize("encoded", ["%0A", "%20", "\\N", "\\e", "\\0", "\\L"])
def test_a_token_after_an_encoded_separator_is_masked(encoded: str) -> None:
    """Found in review: a URL's percent-encoding and YAML's escapes left a letter or digit
    right before the token."""
    assert TOKEN not in mask_credentials(f"GET /orgs/acme{encoded}{TOKEN}/runners")


def test_the_json_log_masks_a_token_after_a_no_break_space() -> None:
    record = logging.makeLogRecord({"msg": "webhook", "detail": f"labels \u00a0{TOKEN}"})

    line = JsonFormatter().format(record)

    assert TOKEN not in line and MASK in line


def test_a_refused_request_quoting_a_token_shows_no_credentials() -> None:
    request = copy.deepcopy(SEEDS["/sync/runner"][0])
    request["children"] = {"Pod.v1": {f"ci/{TOKEN}": ["not an object"]}}
    with hook_server() as (client, errors):
        response = post(client, "/sync/runner", orjson.dumps(request))

    assert 400 <= response.status_code < 500
    assert TOKEN not in response.text and TOKEN not in errors.text


@pytest.mark.parametrize(
    "name", ["acme/highs_and_lows_dashboard", "acme/weighs_everything_daily", "ghp_short"]
)
def test_names_that_only_contain_a_token_prefix_are_not_masked(name: str) -> None:
    assert mask_credentials(f"list runners in /repos/{name}: HTTP 404") == (
        f"list runners in /repos/{name}: HTTP 404"
    )


def test_the_registration_a_status_records_is_kept_as_written() -> None:
    """Read back by later calls (where the runner went): masked, they would look elsewhere."""
    status = {"registration": {"organization": f"acme_{TOKEN}"}, "message": f"in {TOKEN}"}
    masked = without_credentials(status, kept=("registration",))

    assert masked == {"registration": status["registration"], "message": f"in {MASK}"}
    clean = {"registration": {"organization": "acme"}, "message": "ok"}
    assert without_credentials(clean, kept=("registration",)) is clean


def test_a_problem_cut_short_is_masked_before_it_is_cut() -> None:
    """A token across the cut would otherwise keep too few characters to be recognized."""
    problem = "x" * (MAX_PROBLEM_CHARACTERS - 20) + f" key {TOKEN} is not valid"

    message = problems_message([problem, *[f"problem {i}" for i in range(20)]])

    assert TOKEN[:12] not in message
    assert message.endswith(f"and {20 + 1 - MAX_PROBLEMS_SHOWN} more")


@given(offset=st.integers(min_value=0, max_value=70))
def test_a_refusal_quoting_a_member_key_cut_short_shows_no_part_of_a_token(offset: int) -> None:
    """Found by a hostile probe: a key was cut to 57 characters and then masked, so a token
    starting past the 27th character left 29 of its 36 characters, below the mask's minimum."""
    request = copy.deepcopy(SEEDS["/sync/runner"][0])
    key = "a" * offset + "/" + TOKEN
    request["children"] = {"Pod.v1": {key: {"kind": "Pod"}}}
    with hook_server() as (client, errors):
        response = post(client, "/sync/runner", orjson.dumps(request))
        check_answer("/sync/runner", request, response, errors)

    assert response.status_code == 422
    assert not any(TOKEN[i : i + 12] in response.text for i in range(len(TOKEN) - 11))
