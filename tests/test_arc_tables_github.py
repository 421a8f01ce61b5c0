"""Ported from actions/actions-runner-controller (Apache-2.0), with attribution

ARC's tests of its GitHub client, at revision 2ee6b3b8 of github/github_test.go:
`TestGetRegistrationToken`, `TestListRunners` and `TestRemoveRunner` (every row, each with
Go's index `[i]` in its id), `TestCleanup` and `TestUserAgent`.

ARC's tests call its `github.Client` (built from `Config{Token: "token"}`, its base URL pointed
at the fake server) against `fake.NewServer` of github/fake/fake.go. Here the client is this
project's GitHub port as the server builds it (`github_from_settings`: the PyGithub adapter
behind `CachedGitHub`, which also keeps registration tokens as ARC's client does), with
`GITHUB_URL` pointed at `ArcFakeServer`: the routes of ARC's fake server these tests reach, each
with ARC's status and body, served over real HTTP on loopback. Like Go's `ServeMux`, a path with
no route gets 404. A registration token's `expires_at` is an hour after the virtual clock's now
(ARC: after `time.Now()`), so the port's cache judges it on the same clock.

How ARC's results map here: a Go `err` is a raised `GitHubError` (and, for a removal, any
outcome but `REMOVED`); `rt.GetToken()` of a nil token is "" and `len(runners)` of a failed
listing is 0, as in Go. ARC asserts only what its test asserts: no error where `err` is false,
the token (`TestGetRegistrationToken`) and the runner count (`TestListRunners`) in every row;
`TestRemoveRunner` checks only the rows without `err`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

import pytest
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Send
from starlette.types import Scope as AsgiScope

from arc_sim.loopback import serve_loopback
from hooks.clock import ManualClock, format_time
from hooks.github.port import GitHubError, GitHubPort, RemoveOutcome, Scope
from hooks.github.pygithub_adapter import USER_AGENT, github_from_settings
from hooks.settings import Settings

REGISTRATION_TOKEN = "fake-registration-token"  # fake.RegistrationToken

# fake.RunnersListBody
RUNNERS_LIST_BODY = """
{
  "total_count": 2,
  "runners": [
    {"id": 1, "name": "test1", "os": "linux", "status": "online", "busy": false},
    {"id": 2, "name": "test2", "os": "linux", "status": "offline", "busy": false}
  ]
}
"""

CREATED, OK, NO_CONTENT, BAD_REQUEST = 201, 200, 204, 400


class ArcFakeServer:
    """ARC's `fake.NewServer(fake.WithFixedResponses(&fake.FixedResponses{ListRunners:
    fake.DefaultListRunnersHandler()}))`, the routes its client tests reach. Every request's
    path and User-Agent are recorded."""

    def __init__(
        self, clock: ManualClock, tokens: dict[str, tuple[int, str]] | None = None
    ) -> None:
        self.requests: list[tuple[str, str, str]] = []  # (method, path, User-Agent)

        def token_body(expires_in: timedelta = timedelta(hours=1)) -> str:
            expires_at = format_time(clock.now() + expires_in)
            return f'{{"token": "{REGISTRATION_TOKEN}", "expires_at": "{expires_at}"}}'

        self.routes: dict[str, tuple[int, str]] = {}
        for prefix in ("/repos/test", "/orgs", "/enterprises"):
            valid, invalid, error = (
                ("/repos/test/valid", "/repos/test/invalid", "/repos/test/error")
                if prefix == "/repos/test"
                else (f"{prefix}/test", f"{prefix}/invalid", f"{prefix}/error")
            )
            # For CreateRegistrationToken
            self.routes[f"{valid}/actions/runners/registration-token"] = (CREATED, token_body())
            self.routes[f"{invalid}/actions/runners/registration-token"] = (OK, token_body())
            self.routes[f"{error}/actions/runners/registration-token"] = (BAD_REQUEST, "")
            # For ListRunners (the repository's: fake.DefaultListRunnersHandler(), the same)
            self.routes[f"{valid}/actions/runners"] = (OK, RUNNERS_LIST_BODY)
            self.routes[f"{invalid}/actions/runners"] = (NO_CONTENT, "")
            self.routes[f"{error}/actions/runners"] = (BAD_REQUEST, "")
            # For RemoveRunner
            self.routes[f"{valid}/actions/runners/1"] = (NO_CONTENT, "")
            self.routes[f"{invalid}/actions/runners/1"] = (OK, "")
            self.routes[f"{error}/actions/runners/1"] = (BAD_REQUEST, "")
        self.routes["/repos/test/valid/actions/runners/0"] = (NO_CONTENT, "")
        for path, answer in (tokens or {}).items():
            self.routes[path] = answer

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        request = Request(scope, receive)
        self.requests.append(
            (request.method, request.url.path, request.headers.get("user-agent", ""))
        )
        # Go's handlers write the status, then the body, whatever the method; Go's ServeMux
        # answers an unknown path with 404. Go sniffs text/plain for these bodies.
        status, body = self.routes.get(request.url.path, (404, "404 page not found\n"))
        media_type = "text/plain; charset=utf-8"
        if status == NO_CONTENT:
            response = Response(status_code=status)
        else:
            response = Response(body, status_code=status, media_type=media_type)
        await response(scope, receive, send)

    def count(self, path: str) -> int:
        return sum(1 for _, served, _ in self.requests if served == path)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def server(clock: ManualClock) -> ArcFakeServer:
    return ArcFakeServer(clock)


def new_test_client(base_url: str, clock: ManualClock) -> GitHubPort:
    """ARC's `newTestClient()`: `Config{Token: "token"}`, base URL the fake server's."""
    settings = Settings.model_validate({"GITHUB_TOKEN": "token", "GITHUB_URL": base_url})
    return github_from_settings(settings, clock)


@pytest.fixture
def client(server: ArcFakeServer, clock: ManualClock) -> Iterator[GitHubPort]:
    with serve_loopback(server) as base_url:
        yield new_test_client(base_url, clock)


@dataclass(frozen=True)
class Row:
    enterprise: str
    org: str
    repo: str
    err: bool

    @property
    def scope(self) -> Scope:
        return Scope(enterprise=self.enterprise, organization=self.org, repository=self.repo)


def rows(values: list[tuple[str, str, str, object, bool]]) -> list[object]:
    return [
        pytest.param(Row(enterprise, org, repo, err), want, id=str(index))
        for index, (enterprise, org, repo, want, err) in enumerate(values)
    ]


# TestGetRegistrationToken: enterprise, org, repo, token, err
GET_REGISTRATION_TOKEN = rows(
    [
        ("", "", "test/valid", REGISTRATION_TOKEN, False),
        ("", "", "test/invalid", "", True),
        ("", "", "test/error", "", True),
        ("", "test", "", REGISTRATION_TOKEN, False),
        ("", "invalid", "", "", True),
        ("", "error", "", "", True),
        ("test", "", "", REGISTRATION_TOKEN, False),
        ("invalid", "", "", "", True),
        ("error", "", "", "", True),
    ]
)


@pytest.mark.parametrize(("tt", "token"), GET_REGISTRATION_TOKEN)
def test_get_registration_token(client: GitHubPort, tt: Row, token: str) -> None:
    # ARC: rt, err := client.GetRegistrationToken(ctx, tt.enterprise, tt.org, tt.repo, "test")
    error: GitHubError | None = None
    got = ""
    try:
        got = client.registration_token(tt.scope).token
    except GitHubError as raised:
        error = raised
    if not tt.err:
        assert error is None, f"unexpected error: {error}"
    assert got == token, f"unexpected token: {got}"


# TestListRunners: enterprise, org, repo, length, err
LIST_RUNNERS = rows(
    [
        ("", "", "test/valid", 2, False),
        ("", "", "test/invalid", 0, True),
        ("", "", "test/error", 0, True),
        ("", "test", "", 2, False),
        ("", "invalid", "", 0, True),
        ("", "error", "", 0, True),
        ("test", "", "", 2, False),
        ("invalid", "", "", 0, True),
        ("error", "", "", 0, True),
    ]
)


@pytest.mark.parametrize(("tt", "length"), LIST_RUNNERS)
def test_list_runners(client: GitHubPort, tt: Row, length: int) -> None:
    error: GitHubError | None = None
    runners = []
    try:
        runners = list(client.list_runners(tt.scope))
    except GitHubError as raised:
        error = raised
    if not tt.err:
        assert error is None, f"unexpected error: {error}"
    assert len(runners) == length, f"unexpected runners list: {runners}"


# TestRemoveRunner: enterprise, org, repo, err
REMOVE_RUNNER = rows(
    [
        ("", "", "test/valid", None, False),
        ("", "", "test/invalid", None, True),
        ("", "", "test/error", None, True),
        ("", "test", "", None, False),
        ("", "invalid", "", None, True),
        ("", "error", "", None, True),
        ("test", "", "", None, False),
        ("invalid", "", "", None, True),
        ("error", "", "", None, True),
    ]
)


@pytest.mark.parametrize(("tt", "_unused"), REMOVE_RUNNER)
def test_remove_runner(client: GitHubPort, tt: Row, _unused: None) -> None:
    # ARC: err := client.RemoveRunner(ctx, tt.enterprise, tt.org, tt.repo, int64(1))
    result = client.remove_runner(tt.scope, 1)
    if not tt.err:
        assert result.outcome is RemoveOutcome.REMOVED, f"unexpected error: {result.message}"


def test_cleanup(clock: ManualClock) -> None:
    """ARC's client holds an "active" token (expiring in an hour) and an "expired" one (an
    hour ago); `cleanup()` must keep the first and drop the second. Here the two tokens are
    what GitHub gave for two organizations, "active" and "expired": a token kept is handed out
    again without asking GitHub, one dropped is asked for again."""
    path = "/orgs/{}/actions/runners/registration-token"

    def token(expires_in: timedelta) -> tuple[int, str]:
        expires_at = format_time(clock.now() + expires_in)
        return CREATED, f'{{"token": "token", "expires_at": "{expires_at}"}}'

    server = ArcFakeServer(
        clock,
        tokens={
            path.format("active"): token(timedelta(hours=1)),
            path.format("expired"): token(-timedelta(hours=1)),
        },
    )
    with serve_loopback(server) as base_url:
        client = new_test_client(base_url, clock)
        for _ in range(2):
            for org in ("active", "expired"):
                # An expired token may be refused as such: what counts is whether it is kept.
                with contextlib.suppress(GitHubError):
                    client.registration_token(Scope(organization=org))

    assert server.count(path.format("active")) == 1, "active token was accidentally removed"
    assert server.count(path.format("expired")) == 2, "expired token still exists"


def test_user_agent(server: ArcFakeServer, client: GitHubPort) -> None:
    """ARC: `client.UserAgent` must be "actions-runner-controller/NA" (`build.Version` unset
    in tests). Deliberately different here (README, 'Where arc-hooks differs from ARC, on
    purpose'): the client names itself, so GitHub's logs and an enterprise's audit tell its
    calls from ARC's."""
    client.list_runners(Scope(repository="test/valid"))

    user_agents = {user_agent for _, _, user_agent in server.requests}
    assert user_agents == {USER_AGENT}
    assert USER_AGENT.startswith("arc-hooks/")  # ARC: "actions-runner-controller/NA"
