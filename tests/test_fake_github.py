"""The fake GitHub against GitHub's own OpenAPI description and documented behaviour.

Every response the tests receive is checked against the description's schema for its operation
and status (strictly for successes: no field GitHub does not document), so the fake cannot drift
from the real API without a test failing.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from openapi_schema_validator import OAS30Validator, oas30_format_checker
from starlette.routing import Route

from arc_sim.fake_github import (
    FakeGitHub,
    FakeGitHubError,
    FaultKnobs,
    InvalidJitConfigError,
    InvalidTokenError,
    NameTakenError,
    RunnerBusyError,
)
from arc_sim.loopback import serve_loopback
from hooks.clock import ManualClock
from hooks.github.port import Scope

Json = dict[str, Any]

REFERENCE = Path(__file__).parent / "reference" / "github"
PAT = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"
START = datetime(2026, 1, 1, tzinfo=UTC)

REPO = Scope(repository="octo-org/hello-world")
ORG = Scope(organization="octo-org")
ENTERPRISE = Scope(enterprise="octo-enterprise")
SCOPES = [
    pytest.param(REPO, id="repo"),
    pytest.param(ORG, id="org"),
    pytest.param(ENTERPRISE, id="ent"),
]
PREFIXES = [pytest.param("", id="dotcom"), pytest.param("/api/v3", id="ghes")]


# GitHub's OpenAPI description


def _strict(node: Any) -> Any:
    """The schema with `additionalProperties: false` on every object that lists its properties."""
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    strict = {key: _strict(value) for key, value in node.items()}
    if strict.get("type") == "object" and isinstance(strict.get("properties"), dict):
        strict.setdefault("additionalProperties", False)
    return strict


def _nullable_enums(node: Any) -> Any:
    """The schema with null added to the enum of every nullable property.

    OpenAPI 3.0.3 says `nullable` does not extend an `enum`, but GitHub's description relies on
    it doing so: a queued job's `conclusion` is `nullable` with an enum of non-null values, and
    GitHub sends null there (its webhook description, in OpenAPI 3.1, lists null explicitly).
    """
    if isinstance(node, list):
        return [_nullable_enums(item) for item in node]
    if not isinstance(node, dict):
        return node
    fixed = {key: _nullable_enums(value) for key, value in node.items()}
    enum = fixed.get("enum")
    if fixed.get("nullable") is True and isinstance(enum, list) and None not in enum:
        fixed["enum"] = [*enum, None]
    return fixed


class OpenApi:
    """GitHub's description (api.github.com and GHEC variants) as a response checker."""

    def __init__(self, *names: str) -> None:
        self.documents: list[Json] = [
            _nullable_enums(json.loads((REFERENCE / n).read_text())) for n in names
        ]
        self.strict_components = [_strict(d["components"]) for d in self.documents]

    def validate(self, schema: Json, instance: object, *, strict: bool, document: int = 0) -> None:
        components = (
            self.strict_components[document] if strict else self.documents[document]["components"]
        )
        validator = OAS30Validator(
            {**schema, "components": components}, format_checker=oas30_format_checker
        )
        validator.validate(instance)

    def check(self, method: str, route: str | None, response: httpx.Response) -> None:
        status = response.status_code
        if status == 304:
            assert response.content == b""
            return
        described: list[tuple[int, Json]] = []
        if route is not None:
            operations = [
                (i, doc["paths"][route][method.lower()])
                for i, doc in enumerate(self.documents)
                if method.lower() in doc["paths"].get(route, {})
            ]
            assert operations, f"{method} {route} is not in GitHub's description"
            described = [
                (i, self._resolve(i, op["responses"][str(status)]))
                for i, op in operations
                if str(status) in op["responses"]
            ]
        if not described:
            # Statuses the description leaves out (404 on runner reads, 401, 429, 5xx) still
            # carry GitHub's basic error.
            assert status >= 400, f"{method} {route}: undocumented success {status}"
            self.validate(
                {"$ref": "#/components/schemas/basic-error"}, response.json(), strict=False
            )
            return
        for document, description in described:
            content = description.get("content", {}).get("application/json")
            if content is None:
                assert response.content == b"", f"{method} {route} {status} must have no body"
            else:
                self.validate(
                    content["schema"], response.json(), strict=status < 300, document=document
                )

    def _resolve(self, document: int, node: Json) -> Json:
        while "$ref" in node:
            *_, kind, name = node["$ref"].split("/")
            node = self.documents[document]["components"][kind][name]
        return node


SPEC = OpenApi("openapi-api.github.com-runners.json", "openapi-ghec-runners.json")


# A client that checks every response


class Api:
    """Calls the fake through its ASGI app; every response is checked against the description."""

    def __init__(
        self, github: FakeGitHub, *, authorization: str | None = f"token {PAT}", prefix: str = ""
    ) -> None:
        self.github = github
        self.authorization = authorization
        self.prefix = prefix

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body: object = None,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        all_headers = {"Authorization": self.authorization} if self.authorization else {}
        all_headers.update(headers or {})

        async def send() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.github.app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://testserver"
            ) as client:
                return await client.request(
                    method,
                    self.prefix + path,
                    json=json_body,
                    content=content,
                    headers=all_headers,
                )

        response = asyncio.run(send())
        record = self.github.requests[-1]
        assert record.status == response.status_code
        SPEC.check(method, record.route, response)
        return response

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("DELETE", path, **kwargs)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def github(clock: ManualClock) -> FakeGitHub:
    github = FakeGitHub(clock)
    github.add_personal_access_token(PAT)
    return github


@pytest.fixture
def api(github: FakeGitHub) -> Api:
    return Api(github)


def runners_path(scope: Scope) -> str:
    return f"{scope.api_path}/actions/runners"


def registration_token(api: Api, scope: Scope) -> str:
    token: str = api.post(f"{runners_path(scope)}/registration-token").json()["token"]
    return token


def register(github: FakeGitHub, scope: Scope, *names: str, online: bool = False) -> list[int]:
    token = github.create_registration_token(scope).value
    ids = [github.register_runner(scope, name, ["linux-pool"], token).id for name in names]
    for runner_id in ids:
        if online:
            github.set_online(scope, runner_id)
    return ids


def links(response: httpx.Response) -> dict[str, str]:
    """The RFC 5988 `Link` header as {rel: url}."""
    header = response.headers.get("link", "")
    return dict((rel, url) for url, rel in re.findall(r'<([^>]+)>;\s*rel="([^"]+)"', header))


def epoch(when: datetime) -> str:
    return str(int(when.timestamp()))


# The description itself


def test_every_route_is_an_operation_of_githubs_description(github: FakeGitHub) -> None:
    routes = github.api.routes
    assert routes
    for route in routes:
        assert any(
            route.method.lower() in doc["paths"].get(route.template, {}) for doc in SPEC.documents
        ), f"{route.method} {route.template}"
    # The ASGI app routes nothing itself: every request goes to the one pipeline.
    (catch_all,) = github.app.routes
    assert isinstance(catch_all, Route)
    assert catch_all.path == "/{path:path}"


def test_the_strict_check_rejects_undocumented_fields_and_bad_values() -> None:
    runner = {"$ref": "#/components/schemas/runner"}
    good = {"id": 1, "name": "r", "os": "Linux", "status": "online", "busy": False, "labels": []}
    SPEC.validate(runner, good, strict=True)
    with pytest.raises(Exception, match="Additional properties"):
        SPEC.validate(runner, {**good, "runner_group": "Default"}, strict=True)
    with pytest.raises(Exception, match="is not one of"):
        SPEC.validate(runner, {**good, "labels": [{"name": "x", "type": "system"}]}, strict=True)


# Listing and reading runners


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("scope", SCOPES)
def test_list_runners_at_every_scope_and_base_path(
    github: FakeGitHub, scope: Scope, prefix: str
) -> None:
    api = Api(github, prefix=prefix)
    empty = api.get(runners_path(scope))
    assert empty.status_code == 200
    assert empty.json() == {"total_count": 0, "runners": []}
    assert empty.headers["cache-control"] == "private, max-age=60, s-maxage=60"
    assert empty.headers["etag"].startswith('W/"')
    assert "link" not in empty.headers

    (runner_id,) = register(github, scope, "runner-a")
    listed = api.get(runners_path(scope)).json()
    assert listed["total_count"] == 1
    runner = listed["runners"][0]
    assert runner["id"] == runner_id
    assert runner["name"] == "runner-a"
    assert (runner["status"], runner["busy"], runner["ephemeral"]) == ("offline", False, False)
    assert [(lb["name"], lb["type"]) for lb in runner["labels"]] == [
        ("self-hosted", "read-only"),
        ("Linux", "read-only"),
        ("X64", "read-only"),
        ("linux-pool", "custom"),
    ]
    assert "version" not in runner  # only once the runner has connected

    github.set_online(scope, runner_id)
    fetched = api.get(f"{runners_path(scope)}/{runner_id}").json()
    assert (fetched["status"], fetched["os"], fetched["version"]) == ("online", "Linux", "2.330.0")


def test_scope_names_are_case_insensitive(github: FakeGitHub, api: Api) -> None:
    register(github, ORG, "runner-a")
    assert api.get("/orgs/OCTO-ORG/actions/runners").json()["total_count"] == 1


def test_pagination_follows_githubs_link_header(github: FakeGitHub, api: Api) -> None:
    register(github, ORG, *(f"runner-{i:02}" for i in range(75)))
    path = runners_path(ORG)

    first = api.get(path)
    assert len(first.json()["runners"]) == 30  # per_page defaults to 30
    assert first.json()["total_count"] == 75
    assert list(links(first)) == ["next", "last"]
    assert links(first)["last"].endswith("page=3")

    middle = api.get(f"{path}?page=2")
    assert list(links(middle)) == ["prev", "next", "last", "first"]

    last = api.get(f"{path}?page=3")
    assert len(last.json()["runners"]) == 15
    assert list(links(last)) == ["prev", "first"]

    names: list[str] = []
    url: str | None = f"{path}?per_page=20"
    while url is not None:
        page = api.get(url.removeprefix("http://testserver"))
        names += [r["name"] for r in page.json()["runners"]]
        url = links(page).get("next")
    assert names == [f"runner-{i:02}" for i in range(75)]

    capped = api.get(f"{path}?per_page=500")  # GitHub caps per_page at 100
    assert len(capped.json()["runners"]) == 75
    assert "link" not in capped.headers


def test_link_header_keeps_the_ghes_base_path_and_query(github: FakeGitHub) -> None:
    register(github, ORG, *(f"runner-{i}" for i in range(5)))
    page = Api(github, prefix="/api/v3").get(f"{runners_path(ORG)}?per_page=2&page=2")
    assert links(page) == {
        "prev": "http://testserver/api/v3/orgs/octo-org/actions/runners?per_page=2&page=1",
        "next": "http://testserver/api/v3/orgs/octo-org/actions/runners?per_page=2&page=3",
        "last": "http://testserver/api/v3/orgs/octo-org/actions/runners?per_page=2&page=3",
        "first": "http://testserver/api/v3/orgs/octo-org/actions/runners?per_page=2&page=1",
    }


def test_name_filter(github: FakeGitHub, api: Api) -> None:
    register(github, REPO, "runner-a", "runner-b")
    body = api.get(f"{runners_path(REPO)}?name=runner-b").json()
    assert [r["name"] for r in body["runners"]] == ["runner-b"]
    assert body["total_count"] == 1


@pytest.mark.parametrize("scope", SCOPES)
def test_unknown_runner_is_404(api: Api, scope: Scope) -> None:
    for path in (f"{runners_path(scope)}/999", f"{runners_path(scope)}/not-a-number"):
        response = api.get(path)
        assert response.status_code == 404
        assert response.json()["message"] == "Not Found"
        assert response.json()["documentation_url"].startswith("https://docs.github.com/")


def test_unknown_path_is_a_json_404(api: Api) -> None:
    response = api.get("/orgs/octo-org/no-such-thing")
    assert response.status_code == 404
    assert response.json()["message"] == "Not Found"


def test_conditional_request_gets_304_and_costs_nothing(github: FakeGitHub, api: Api) -> None:
    first = api.get(runners_path(ORG))
    etag = first.headers["etag"]
    unchanged = api.get(runners_path(ORG), headers={"If-None-Match": etag})
    assert unchanged.status_code == 304
    assert unchanged.headers["x-ratelimit-remaining"] == first.headers["x-ratelimit-remaining"]

    register(github, ORG, "runner-a")
    changed = api.get(runners_path(ORG), headers={"If-None-Match": etag})
    assert changed.status_code == 200
    assert changed.headers["etag"] != etag


# Removing runners


@pytest.mark.parametrize("scope", SCOPES)
def test_delete_runner(github: FakeGitHub, api: Api, scope: Scope) -> None:
    (runner_id,) = register(github, scope, "runner-a")
    deleted = api.delete(f"{runners_path(scope)}/{runner_id}")
    assert deleted.status_code == 204
    assert deleted.content == b""
    assert github.runners(scope) == []
    assert api.delete(f"{runners_path(scope)}/{runner_id}").status_code == 404


@pytest.mark.parametrize("scope", SCOPES)
def test_delete_busy_runner_is_422(github: FakeGitHub, api: Api, scope: Scope) -> None:
    (runner_id,) = register(github, scope, "example-runnerset-0", online=True)
    github.set_busy(scope, runner_id, True)

    refused = api.delete(f"{runners_path(scope)}/{runner_id}")
    assert refused.status_code == 422
    message = refused.json()["message"]
    assert message.startswith('Bad request - Runner "example-runnerset-0"')
    assert "is still running a job" in message
    assert github.runner(scope, runner_id).busy

    github.set_busy(scope, runner_id, False)
    assert api.delete(f"{runners_path(scope)}/{runner_id}").status_code == 204


# Registration and remove tokens


@pytest.mark.parametrize("scope", SCOPES)
def test_registration_and_remove_tokens(api: Api, clock: ManualClock, scope: Scope) -> None:
    for kind in ("registration-token", "remove-token"):
        response = api.post(f"{runners_path(scope)}/{kind}")
        assert response.status_code == 201
        expires_at = response.json()["expires_at"]
        # GitHub's format: milliseconds and a non-UTC offset.
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d", expires_at)
        assert datetime.fromisoformat(expires_at) == clock.now() + timedelta(hours=1)


def test_registration_token_expires_in_virtual_time(clock: ManualClock) -> None:
    github = FakeGitHub(clock, token_ttl_seconds=600)
    github.add_personal_access_token(PAT)
    token = registration_token(Api(github), ORG)

    clock.advance(599)
    github.register_runner(ORG, "in-time", [], token)
    clock.advance(1)
    with pytest.raises(InvalidTokenError, match="expired"):
        github.register_runner(ORG, "too-late", [], token)
    assert [r.name for r in github.runners(ORG)] == ["in-time"]


def test_tokens_are_bound_to_their_scope_and_purpose(github: FakeGitHub, api: Api) -> None:
    token = registration_token(api, ORG)
    with pytest.raises(InvalidTokenError):
        github.register_runner(Scope(organization="other-org"), "runner-a", [], token)
    with pytest.raises(InvalidTokenError):
        github.register_runner(ORG, "runner-a", [], "NOTATOKEN")

    remove_token = api.post(f"{runners_path(ORG)}/remove-token").json()["token"]
    with pytest.raises(InvalidTokenError):
        github.register_runner(ORG, "runner-a", [], remove_token)
    runner = github.register_runner(ORG, "runner-a", [], token)
    with pytest.raises(InvalidTokenError):
        github.unregister_runner(ORG, runner.id, remove_token=token)
    github.unregister_runner(ORG, runner.id, remove_token=remove_token)
    assert github.runners(ORG) == []


def test_same_name_needs_replace_which_keeps_the_id(github: FakeGitHub, api: Api) -> None:
    token = registration_token(api, REPO)
    first = github.register_runner(REPO, "runner-a", ["old"], token)
    with pytest.raises(NameTakenError):
        github.register_runner(REPO, "runner-a", ["new"], token)
    replaced = github.register_runner(REPO, "runner-a", ["new"], token, replace=True)
    assert replaced.id == first.id
    assert replaced.labels == ("self-hosted", "Linux", "X64", "new")
    assert len(github.runners(REPO)) == 1


def test_runner_side_rules(github: FakeGitHub) -> None:
    (runner_id,) = register(github, ORG, "runner-a")
    with pytest.raises(FakeGitHubError, match="offline"):
        github.set_busy(ORG, runner_id, True)
    github.set_online(ORG, runner_id)
    github.set_busy(ORG, runner_id, True)
    with pytest.raises(RunnerBusyError):
        github.unregister_runner(ORG, runner_id)
    github.set_busy(ORG, runner_id, False)
    github.set_online(ORG, runner_id, False)
    assert github.runner(ORG, runner_id).status == "offline"
    token = github.create_registration_token(ORG).value
    windows = github.register_runner(ORG, "runner-w", [], token, os="Windows")
    github.set_online(ORG, windows.id)
    assert github.runner_record(ORG, windows.id).os == "Windows"
    github.unregister_runner(ORG, windows.id)
    github.unregister_runner(ORG, runner_id)
    assert github.runner_records() == []


# Just-in-time runners


def jit_body(name: str = "jit-runner", group: int = 1, labels: list[str] | None = None) -> Json:
    return {
        "name": name,
        "runner_group_id": group,
        "labels": ["self-hosted", "gpu"] if labels is None else labels,
    }


@pytest.mark.parametrize("scope", SCOPES)
def test_generate_jitconfig(github: FakeGitHub, api: Api, scope: Scope) -> None:
    response = api.post(f"{runners_path(scope)}/generate-jitconfig", json_body=jit_body())
    assert response.status_code == 201
    runner = response.json()["runner"]
    assert (runner["status"], runner["os"], runner["busy"]) == ("offline", "unknown", False)
    assert runner["ephemeral"] is True
    assert [(lb["name"], lb["type"]) for lb in runner["labels"]] == [
        ("self-hosted", "read-only"),
        ("gpu", "custom"),
    ]
    # The record exists from now on, before any runner has started.
    listed = api.get(runners_path(scope)).json()["runners"]
    assert [r["id"] for r in listed] == [runner["id"]]

    encoded = response.json()["encoded_jit_config"]
    files = json.loads(base64.b64decode(encoded))
    settings = json.loads(base64.b64decode(files[".runner"]))
    assert (settings["AgentId"], settings["AgentName"]) == (runner["id"], "jit-runner")

    taken = github.register_jit(encoded)
    assert taken.id == runner["id"]
    with pytest.raises(InvalidJitConfigError, match="already used"):
        github.register_jit(encoded)
    github.set_online(scope, taken.id)
    assert api.get(f"{runners_path(scope)}/{taken.id}").json()["os"] == "Linux"


@pytest.mark.parametrize("scope", SCOPES)
def test_jitconfig_for_a_taken_name_is_409(github: FakeGitHub, api: Api, scope: Scope) -> None:
    path = f"{runners_path(scope)}/generate-jitconfig"
    assert api.post(path, json_body=jit_body("runner-a")).status_code == 201
    conflict = api.post(path, json_body=jit_body("runner-a"))
    assert conflict.status_code == 409
    assert "already exists" in conflict.json()["message"]

    register(github, scope, "registered")
    assert api.post(path, json_body=jit_body("registered")).status_code == 409


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"runner_group_id": 1, "labels": ["x"]}, id="no-name"),
        pytest.param({"name": "r", "labels": ["x"]}, id="no-group"),
        pytest.param({"name": "r", "runner_group_id": 1}, id="no-labels"),
        pytest.param(jit_body(labels=[]), id="no-label"),
        pytest.param({**jit_body(), "labels": [f"l{i}" for i in range(101)]}, id="101-labels"),
        pytest.param({**jit_body(), "labels": [1]}, id="label-not-string"),
        pytest.param({**jit_body(), "runner_group_id": "1"}, id="group-not-int"),
        pytest.param({**jit_body(), "name": ""}, id="empty-name"),
        pytest.param({**jit_body(), "work_folder": 7}, id="work-folder-not-string"),
    ],
)
def test_invalid_jitconfig_body_is_422(github: FakeGitHub, api: Api, body: Json) -> None:
    response = api.post(f"{runners_path(ORG)}/generate-jitconfig", json_body=body)
    assert response.status_code == 422
    assert response.json()["message"].startswith("Invalid request.")
    assert github.runner_records() == []


def test_unparsable_jitconfig_body_is_400(api: Api) -> None:
    response = api.post(f"{runners_path(ORG)}/generate-jitconfig", content=b"{not json")
    assert response.status_code == 400
    assert response.json()["message"] == "Problems parsing JSON"


def test_jitconfig_for_an_unknown_group_is_404(github: FakeGitHub, api: Api) -> None:
    for scope in (REPO, ORG, ENTERPRISE):
        path = f"{runners_path(scope)}/generate-jitconfig"
        assert api.post(path, json_body=jit_body(group=2)).status_code == 404

    group = github.add_runner_group(ORG, "gpu-runners")
    created = api.post(
        f"{runners_path(ORG)}/generate-jitconfig", json_body=jit_body(group=group.id)
    )
    assert created.status_code == 201
    assert created.json()["runner"]["runner_group_id"] == group.id


def test_jit_config_of_a_deleted_runner_is_useless(github: FakeGitHub, api: Api) -> None:
    created = api.post(f"{runners_path(ORG)}/generate-jitconfig", json_body=jit_body()).json()
    assert api.delete(f"{runners_path(ORG)}/{created['runner']['id']}").status_code == 204
    with pytest.raises(InvalidJitConfigError, match="deleted"):
        github.register_jit(created["encoded_jit_config"])
    with pytest.raises(InvalidJitConfigError, match="unknown"):
        github.register_jit("bm90IGEgY29uZmln")


# Runner groups


@pytest.mark.parametrize("scope", [pytest.param(ORG, id="org"), pytest.param(ENTERPRISE, id="ent")])
def test_runner_groups(github: FakeGitHub, api: Api, scope: Scope) -> None:
    path = f"{scope.api_path}/actions/runner-groups"
    (default,) = api.get(path).json()["runner_groups"]
    assert (default["id"], default["name"], default["default"]) == (1, "Default", True)
    assert default["runners_url"].endswith(f"{path}/1/runners")

    github.add_runner_group(scope, "gpu-runners")
    github.add_runner_group(
        scope, "deploy", visibility="selected", selected_repositories=["octo-org/deploy"]
    )
    body = api.get(path).json()
    assert body["total_count"] == 3
    assert [g["name"] for g in body["runner_groups"]] == ["Default", "gpu-runners", "deploy"]

    paged = api.get(f"{path}?per_page=2&page=2")
    assert [g["name"] for g in paged.json()["runner_groups"]] == ["deploy"]
    assert list(links(paged)) == ["prev", "first"]


def test_runner_groups_visible_to_a_repository(github: FakeGitHub, api: Api) -> None:
    github.add_runner_group(
        ORG, "deploy", visibility="selected", selected_repositories=["octo-org/deploy"]
    )
    github.add_runner_group(ORG, "everyone")
    path = f"{ORG.api_path}/actions/runner-groups"

    def visible(repository_name: str) -> list[str]:
        query = f"visible_to_repository={repository_name}"
        return [g["name"] for g in api.get(f"{path}?{query}").json()["runner_groups"]]

    # GitHub takes the repository's bare name, as ARC sends it.
    assert visible("hello-world") == ["Default", "everyone"]
    assert visible("DEPLOY") == ["Default", "deploy", "everyone"]
    # An owner in the value names no repository of the organization.
    assert visible("octo-org/deploy") == ["Default", "everyone"]
    assert visible("") == ["Default", "deploy", "everyone"]  # no filter


def test_an_organization_lists_the_groups_its_enterprise_shares(
    github: FakeGitHub, api: Api
) -> None:
    github.set_enterprise_of("octo-org", "octo-enterprise")
    github.add_runner_group(
        ORG, "deploy", visibility="selected", selected_repositories=["octo-org/deploy"]
    )
    github.add_runner_group(ENTERPRISE, "shared")
    github.add_runner_group(
        ENTERPRISE, "octo-only", visibility="selected", selected_organizations=["Octo-Org"]
    )
    github.add_runner_group(
        ENTERPRISE, "others-only", visibility="selected", selected_organizations=["other-org"]
    )
    path = f"{ORG.api_path}/actions/runner-groups"

    def listed(query: str) -> list[tuple[str, bool, bool]]:
        groups = api.get(f"{path}?{query}").json()["runner_groups"]
        return [(g["name"], g["default"], g["inherited"]) for g in groups]

    inherited = [("Default", True, True), ("shared", False, True), ("octo-only", False, True)]
    assert listed("visible_to_repository=hello-world") == [("Default", True, False), *inherited]
    everything = listed("")
    assert everything == [("Default", True, False), ("deploy", False, False), *inherited]

    paged = api.get(f"{path}?visible_to_repository=deploy&per_page=3&page=2").json()
    assert paged["total_count"] == 5
    assert [g["name"] for g in paged["runner_groups"]] == ["shared", "octo-only"]
    shared = paged["runner_groups"][0]
    # Listed as the organization's: its URLs, and open to all its repositories.
    assert shared["visibility"] == "all"
    assert shared["runners_url"].endswith(f"{path}/2/runners")

    # The enterprise lists its own groups only, and other organizations inherit nothing.
    enterprise_path = f"{ENTERPRISE.api_path}/actions/runner-groups"
    enterprise_groups = api.get(enterprise_path).json()["runner_groups"]
    assert [g["name"] for g in enterprise_groups] == [
        "Default",
        "shared",
        "octo-only",
        "others-only",
    ]
    lone = api.get("/orgs/lone-org/actions/runner-groups").json()["runner_groups"]
    assert [(g["name"], g["inherited"]) for g in lone] == [("Default", False)]


def test_enterprise_runners_take_jobs_of_the_organizations_their_group_is_shared_with(
    github: FakeGitHub,
) -> None:
    for organization in ("octo-org", "other-org"):
        github.set_enterprise_of(organization, "octo-enterprise")
    group = github.add_runner_group(
        ENTERPRISE, "octo-only", visibility="selected", selected_organizations=["octo-org"]
    )
    token = github.create_registration_token(ENTERPRISE).value
    runner = github.register_runner(
        ENTERPRISE, "ent-runner", ["linux-pool"], token, runner_group_id=group.id
    )
    github.set_online(ENTERPRISE, runner.id)
    elsewhere = github.submit_job("other-org/app", ["linux-pool"], 60)
    assert github.job(elsewhere.id).status == "queued"
    here = github.submit_job("octo-org/app", ["linux-pool"], 60)
    assert github.job(here.id).runner_id == runner.id


def test_repositories_have_no_runner_groups(github: FakeGitHub, api: Api) -> None:
    with pytest.raises(ValueError):
        github.add_runner_group(REPO, "nope")
    assert api.get(f"{REPO.api_path}/actions/runner-groups").status_code == 404


# Authentication


def test_requests_without_valid_credentials_are_401(github: FakeGitHub) -> None:
    anonymous = Api(github, authorization=None).get(runners_path(ORG))
    assert anonymous.status_code == 401
    assert anonymous.json()["message"] == "Requires authentication"
    assert anonymous.headers["x-ratelimit-limit"] == "60"

    for authorization in ("token ghp_unknown", "Bearer ghp_unknown", f"Basic {PAT}", "token"):
        response = Api(github, authorization=authorization).get(runners_path(ORG))
        assert response.status_code == 401
        assert response.json()["message"] == "Bad credentials"

    assert Api(github, authorization=f"Bearer {PAT}").get(runners_path(ORG)).status_code == 200


@pytest.fixture(scope="module")
def app_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def public_pem(key: rsa.RSAPrivateKey) -> str:
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def app_jwt(key: rsa.RSAPrivateKey, now: datetime, *, iss: str = "42", life: int = 600) -> str:
    # As GitHub's docs and PyGithub do: iat 60 s in the past for clock drift.
    issued = int(now.timestamp()) - 60
    return jwt.encode({"iat": issued, "exp": issued + 60 + life, "iss": iss}, key, "RS256")


def token_path(installation_id: int = 7) -> str:
    return f"/app/installations/{installation_id}/access_tokens"


def test_installation_token_from_a_verified_app_jwt(
    github: FakeGitHub, clock: ManualClock, app_key: rsa.RSAPrivateKey
) -> None:
    github.configure_app(public_pem(app_key), app_id=42, installation_ids=[7])
    app = Api(github, authorization=f"Bearer {app_jwt(app_key, clock.now())}")
    created = app.post(token_path(), json_body={"repositories": ["hello-world"]})
    assert created.status_code == 201
    body = created.json()
    assert body["repository_selection"] == "all"
    assert body["permissions"]["organization_self_hosted_runners"] == "write"
    assert datetime.fromisoformat(body["expires_at"]) == clock.now() + timedelta(hours=1)

    installation = Api(github, authorization=f"token {body['token']}")
    assert installation.get(runners_path(ORG)).status_code == 200
    assert github.requests[-1].caller == "installation"

    clock.advance(3600)  # installation tokens expire, in virtual time
    assert installation.get(runners_path(ORG)).status_code == 401


def test_app_jwts_that_github_refuses(
    github: FakeGitHub, clock: ManualClock, app_key: rsa.RSAPrivateKey
) -> None:
    github.configure_app(public_pem(app_key), app_id=42, installation_ids=[7])
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = clock.now()
    refused = {
        "wrong key": app_jwt(other_key, now),
        "wrong app": app_jwt(app_key, now, iss="43"),
        "too long": app_jwt(app_key, now, life=1200),
        "malformed": "not.a.jwt",
        "a PAT": PAT,
    }
    for reason, credential in refused.items():
        response = Api(github, authorization=f"Bearer {credential}").post(token_path())
        assert response.status_code == 401, reason

    good = Api(github, authorization=f"Bearer {app_jwt(app_key, now)}")
    assert good.post(token_path(8)).status_code == 404  # not an installation of this app
    assert good.post(token_path(7), content=b"[").status_code == 400


def test_any_well_formed_rs256_jwt_without_a_configured_key(github: FakeGitHub) -> None:
    def b64(value: Json) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    claims = b64({"iat": 1, "exp": 500, "iss": "123"})
    unsigned = f"{b64({'alg': 'RS256', 'typ': 'JWT'})}.{claims}.c2lnbmF0dXJl"
    assert Api(github, authorization=f"Bearer {unsigned}").post(token_path()).status_code == 201
    hs256 = f"{b64({'alg': 'HS256', 'typ': 'JWT'})}.{claims}.c2lnbmF0dXJl"
    assert Api(github, authorization=f"Bearer {hs256}").post(token_path()).status_code == 401


def test_jwt_expiry_against_the_virtual_clock(
    github: FakeGitHub, clock: ManualClock, app_key: rsa.RSAPrivateKey
) -> None:
    github.configure_app(public_pem(app_key), check_jwt_expiry=True)
    credential = app_jwt(app_key, clock.now(), life=300)
    app = Api(github, authorization=f"Bearer {credential}")
    assert app.post(token_path()).status_code == 201
    clock.advance(300)
    assert app.post(token_path()).status_code == 401


# Rate limits


def test_primary_rate_limit_exhaustion_and_window_reset(clock: ManualClock) -> None:
    github = FakeGitHub(clock, rate_limit_per_hour=3)
    github.add_personal_access_token(PAT)
    api = Api(github)
    reset = epoch(START + timedelta(hours=1))

    for used in (1, 2, 3):
        response = api.get(runners_path(ORG))
        assert response.status_code == 200
        assert response.headers["x-ratelimit-limit"] == "3"
        assert response.headers["x-ratelimit-used"] == str(used)
        assert response.headers["x-ratelimit-remaining"] == str(3 - used)
        assert response.headers["x-ratelimit-reset"] == reset
        assert response.headers["x-ratelimit-resource"] == "core"
        assert github.peak_budget_use() == pytest.approx(used / 3)

    clock.advance(3599)
    exhausted = api.get(runners_path(ORG))
    assert exhausted.status_code == 403
    assert exhausted.json()["message"].startswith("API rate limit exceeded for ")
    assert exhausted.headers["x-ratelimit-remaining"] == "0"
    assert exhausted.headers["x-ratelimit-reset"] == reset

    other = "ghp_another_user"
    github.add_personal_access_token(other)
    assert Api(github, authorization=f"token {other}").get(runners_path(ORG)).status_code == 200

    clock.advance(1)
    renewed = api.get(runners_path(ORG))
    assert renewed.status_code == 200
    assert renewed.headers["x-ratelimit-remaining"] == "2"
    assert github.peak_budget_use() == 1.0  # the peak of the first window stays
    assert renewed.headers["x-ratelimit-reset"] == epoch(START + timedelta(hours=2))


@pytest.mark.parametrize("status", [429, 403])
def test_secondary_rate_limit(
    github: FakeGitHub, api: Api, clock: ManualClock, status: int
) -> None:
    github.impose_secondary_rate_limit(60, status=status)
    limited = api.get(runners_path(ORG))
    assert limited.status_code == status
    assert "secondary rate limit" in limited.json()["message"]
    assert limited.headers["retry-after"] == "60"
    assert limited.headers["x-ratelimit-remaining"] != "0"

    clock.advance(30)
    assert api.get(runners_path(ORG)).headers["retry-after"] == "30"
    clock.advance(30)
    assert api.get(runners_path(ORG)).status_code == 200


# Workflow runs and jobs (what the autoscaler polls)


HELLO = "octo-org/hello-world"
ACTIONS = f"/repos/{HELLO}/actions"


def test_workflow_runs_by_status(github: FakeGitHub, api: Api, clock: ManualClock) -> None:
    assert api.get(f"{ACTIONS}/runs").json() == {"total_count": 0, "workflow_runs": []}
    (runner_id,) = register(github, ORG, "runner-a", online=True)
    running = github.submit_job(HELLO, ["linux-pool"], 60, workflow_name="Build & Test")
    waiting = github.submit_job(HELLO, ["gpu"], 60)
    clock.advance(30)
    done = github.submit_job(HELLO, ["gpu"], 60)
    github.submit_job("octo-org/other", ["gpu"], 60)  # another repository's run

    body = api.get(f"{ACTIONS}/runs").json()
    assert body["total_count"] == 3
    assert [r["id"] for r in body["workflow_runs"]] == [done.run_id, waiting.run_id, running.run_id]
    run = body["workflow_runs"][-1]
    assert (run["status"], run["conclusion"], run["name"]) == ("in_progress", None, "Build & Test")
    assert run["path"] == ".github/workflows/build---test.yml"
    assert run["jobs_url"] == f"http://testserver{ACTIONS}/runs/{running.run_id}/jobs"
    assert run["repository"]["full_name"] == HELLO

    def ids(query: str) -> list[int]:
        return [r["id"] for r in api.get(f"{ACTIONS}/runs?{query}").json()["workflow_runs"]]

    assert ids("status=queued") == [done.run_id, waiting.run_id]
    assert ids("status=in_progress") == [running.run_id]
    github.complete_job(running.id)
    assert ids("status=completed") == ids("status=success") == [running.run_id]
    assert ids("status=failure") == []
    assert ids("status=queued&per_page=1&page=2") == [waiting.run_id]
    assert ids("branch=main&status=queued") == [done.run_id, waiting.run_id]
    assert ids("branch=release") == []
    assert api.get(f"{ACTIONS}/runs?status=bogus").status_code == 422

    single = api.get(f"{ACTIONS}/runs/{running.run_id}").json()
    assert (single["status"], single["conclusion"]) == ("completed", "success")
    assert single["updated_at"] == "2026-01-01T00:00:30Z"
    assert api.get(f"/repos/octo-org/other/actions/runs/{running.run_id}").status_code == 404
    assert github.runner(ORG, runner_id).busy is False


def test_a_runs_status_follows_its_jobs(github: FakeGitHub, api: Api) -> None:
    run_id = 77
    build = github.submit_job(HELLO, ["linux-pool"], 60, run_id=run_id)
    deploy = github.submit_job(HELLO, ["gpu"], 60, run_id=run_id, job_name="deploy")

    def listed_as() -> list[str]:
        found = []
        for status in ("queued", "in_progress", "completed"):
            runs = api.get(f"{ACTIONS}/runs?status={status}").json()["workflow_runs"]
            found += [status for run in runs if run["id"] == run_id]
        return found

    assert listed_as() == ["queued"]
    register(github, ORG, "runner-a", online=True)  # takes the build job only
    assert listed_as() == ["in_progress"]
    github.complete_job(build.id)  # one job done, the other still queued
    assert github.job(deploy.id).status == "queued"
    assert listed_as() == ["in_progress"]
    token = github.create_registration_token(ORG).value
    gpu = github.register_runner(ORG, "runner-gpu", ["gpu"], token)
    github.set_online(ORG, gpu.id)
    github.complete_job(deploy.id)
    assert listed_as() == ["completed"]


def test_the_runs_list_pages_up_to_100(github: FakeGitHub, api: Api) -> None:
    runs = [github.submit_job(HELLO, ["gpu"], 60).run_id for _ in range(120)]
    first = api.get(f"{ACTIONS}/runs?status=queued&per_page=100")
    body = first.json()
    assert body["total_count"] == 120
    assert [r["id"] for r in body["workflow_runs"]] == runs[::-1][:100]  # newest first
    assert list(links(first)) == ["next", "last"]


def test_jobs_of_a_run(github: FakeGitHub, api: Api, clock: ManualClock) -> None:
    run_id = 4711
    jobs = [github.submit_job(HELLO, ["self-hosted", "linux-pool"], 60, run_id=run_id)]
    jobs += [
        github.submit_job(HELLO, ["gpu"], 60, run_id=run_id, job_name=f"test-{i}") for i in range(3)
    ]
    queued = api.get(f"{ACTIONS}/runs/{run_id}/jobs").json()
    assert queued["total_count"] == 4
    first = queued["jobs"][0]
    assert (first["status"], first["conclusion"], first["labels"]) == (
        "queued",
        None,
        ["self-hosted", "linux-pool"],
    )
    assert [first[f] for f in ("runner_id", "runner_name", "runner_group_id")] == [None] * 3
    assert first["started_at"] == first["created_at"] == "2026-01-01T00:00:00Z"
    assert first["steps"] == []

    clock.advance(12)
    (runner_id,) = register(github, ORG, "runner-a", online=True)
    started = api.get(f"{ACTIONS}/jobs/{jobs[0].id}").json()
    assert (started["status"], started["runner_id"], started["runner_name"]) == (
        "in_progress",
        runner_id,
        "runner-a",
    )
    assert (started["runner_group_id"], started["runner_group_name"]) == (1, "Default")
    assert started["started_at"] == "2026-01-01T00:00:12Z"

    paged = api.get(f"{ACTIONS}/runs/{run_id}/jobs?per_page=3&filter=all")
    assert [j["name"] for j in paged.json()["jobs"]] == ["build", "test-0", "test-1"]
    assert list(links(paged)) == ["next", "last"]
    assert api.get(f"{ACTIONS}/runs/{run_id}/jobs?filter=oldest").status_code == 422
    assert api.get(f"{ACTIONS}/runs/999/jobs").status_code == 404
    assert api.get(f"{ACTIONS}/jobs/999").status_code == 404
    assert api.get(f"/repos/octo-org/other/actions/jobs/{jobs[0].id}").status_code == 404


def test_runs_and_jobs_under_the_ghes_prefix(github: FakeGitHub) -> None:
    job = github.submit_job(HELLO, ["gpu"], 60)
    api = Api(github, prefix="/api/v3")
    run = api.get(f"{ACTIONS}/runs").json()["workflow_runs"][0]
    assert run["url"] == f"http://testserver/api/v3{ACTIONS}/runs/{job.run_id}"
    assert run["html_url"] == f"http://testserver/{HELLO}/actions/runs/{job.run_id}"
    fetched = api.get(f"{ACTIONS}/jobs/{job.id}").json()
    assert fetched["run_url"] == run["url"]
    assert github.request_counts() == {
        "GET /repos/{owner}/{repo}/actions/runs": 1,
        "GET /repos/{owner}/{repo}/actions/jobs/{job_id}": 1,
    }


# Fault injection, latency and the request log


def test_injected_faults_hit_only_matching_requests(github: FakeGitHub) -> None:
    (runner_id,) = register(github, ORG, "runner-a")
    api = Api(github, prefix="/api/v3")
    github.fail_next(2, status=502, method="DELETE", path="/orgs/*/actions/runners/*")

    assert api.get(runners_path(ORG)).status_code == 200
    assert api.delete(f"{runners_path(ORG)}/{runner_id}").status_code == 502
    assert api.delete(f"{runners_path(ORG)}/{runner_id}").status_code == 502
    assert github.runners(ORG) != []
    assert api.delete(f"{runners_path(ORG)}/{runner_id}").status_code == 204

    github.fail_next()
    failed = api.post(f"{runners_path(ORG)}/registration-token")
    assert failed.status_code == 500
    assert failed.json()["message"] == "Internal Server Error"
    assert api.post(f"{runners_path(ORG)}/registration-token").status_code == 201


def test_latency_is_recorded_in_virtual_time_only(
    github: FakeGitHub, api: Api, clock: ManualClock
) -> None:
    github.set_latency(0.25)
    for _ in range(3):
        api.get(runners_path(ORG))
    assert [r.latency_seconds for r in github.requests] == [0.25] * 3
    assert github.total_latency_seconds == 0.75
    assert clock.now() == START


def test_random_server_errors_at_the_configured_rate(clock: ManualClock) -> None:
    def statuses(seed: int) -> list[int]:
        github = FakeGitHub(clock, seed=seed)
        github.add_personal_access_token(PAT)
        github.configure_faults(FaultKnobs.from_mapping({"error_rate": 0.25, "latency": 0.1}))
        api = Api(github)
        return [api.get(runners_path(ORG)).status_code for _ in range(200)]

    first = statuses(seed=3)
    assert first == statuses(seed=3)  # seeded: the same run fails the same requests
    assert first != statuses(seed=4)
    failures = [s for s in first if s != 200]
    assert set(failures) <= {500, 502, 503}
    assert 30 <= len(failures) <= 70


def test_fault_knobs_from_a_scenario() -> None:
    knobs = FaultKnobs.from_mapping({"error_rate": 0.1, "error_statuses": [502], "latency": 0.2})
    assert knobs == FaultKnobs(error_rate=0.1, error_statuses=(502,), latency_seconds=0.2)
    assert FaultKnobs.from_mapping({}) == FaultKnobs()
    for bad in (
        {"error_rates": 0.1},
        {"error_rate": 2},
        {"error_statuses": [404]},
        {"latency": -1},
    ):
        with pytest.raises(ValueError):
            FaultKnobs.from_mapping(bad)


def test_configured_latency_is_recorded(github: FakeGitHub, api: Api, clock: ManualClock) -> None:
    github.configure_faults(FaultKnobs(latency_seconds=0.5))
    api.get(runners_path(ORG))
    assert github.total_latency_seconds == 0.5
    assert clock.now() == START


def test_request_log_counts_calls_per_endpoint(github: FakeGitHub, api: Api) -> None:
    (runner_id,) = register(github, ORG, "runner-a")
    api.get(runners_path(ORG))
    api.get(runners_path(ORG))
    api.get(f"{runners_path(ORG)}/{runner_id}")
    api.delete(f"{runners_path(ORG)}/{runner_id}")
    api.delete(f"{runners_path(ORG)}/{runner_id}")
    Api(github, prefix="/api/v3").get(runners_path(REPO))

    assert github.count_requests("GET", "/orgs/{org}/actions/runners") == 2
    assert github.count_requests(route="/orgs/{org}/actions/runners/{runner_id}", status=404) == 1
    assert github.request_counts() == {
        "GET /orgs/{org}/actions/runners": 2,
        "GET /orgs/{org}/actions/runners/{runner_id}": 1,
        "DELETE /orgs/{org}/actions/runners/{runner_id}": 2,
        "GET /repos/{owner}/{repo}/actions/runners": 1,
    }
    assert github.requests[-1].path == "/repos/octo-org/hello-world/actions/runners"
    assert all(r.at == START and r.caller == "user" for r in github.requests)


# Real HTTP


@pytest.fixture
def loopback(github: FakeGitHub) -> Iterator[str]:
    with serve_loopback(github.app) as base_url:
        yield base_url


def test_over_loopback_http(github: FakeGitHub, loopback: str) -> None:
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", loopback)
    register(github, ORG, *(f"runner-{i}" for i in range(5)))
    headers = {"Authorization": f"token {PAT}"}
    with httpx.Client(base_url=f"{loopback}/api/v3", headers=headers) as client:
        names: list[str] = []
        url: str | None = f"{runners_path(ORG)}?per_page=2"
        while url is not None:
            page = client.get(url)
            SPEC.check("GET", github.requests[-1].route, page)
            names += [r["name"] for r in page.json()["runners"]]
            url = links(page).get("next")
        assert names == [f"runner-{i}" for i in range(5)]
        assert page.headers["x-ratelimit-remaining"] == "4997"

        jit = client.post(f"{runners_path(ORG)}/generate-jitconfig", json=jit_body())
        SPEC.check("POST", github.requests[-1].route, jit)
        assert jit.status_code == 201


def test_loopback_server_stops_on_exit(github: FakeGitHub) -> None:
    headers = {"Authorization": f"token {PAT}"}
    with serve_loopback(github.app) as base_url:
        assert httpx.get(f"{base_url}{runners_path(ORG)}", headers=headers).status_code == 200
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{base_url}{runners_path(ORG)}", headers=headers)
