"""REST layer of the fake GitHub: routes, status codes, headers and errors as GitHub sends them.

Every request goes through `_Api.serve`: authenticate, apply injected faults and rate limits, run
the handler against the state, then stamp the rate-limit headers and log the call. Handlers only
translate between HTTP and `GitHubState`; the state never sees a request.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, timedelta, timezone
from http import HTTPStatus
from typing import Any, Literal, TypeVar

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route

from hooks.github.port import Scope
from hooks.sim.github_state import (
    AuthenticationError,
    Caller,
    GitHubState,
    IssuedToken,
    NameTakenError,
    NotFoundError,
    RateBudget,
    RunnerBusyError,
    RunnerGroup,
    RunnerRecord,
)

GHES_PREFIX = "/api/v3"
SCOPE_PREFIXES = ("/repos/{owner}/{repo}", "/orgs/{org}", "/enterprises/{enterprise}")
RUNNER_GROUP_PREFIXES = ("/orgs/{org}", "/enterprises/{enterprise}")
INSTALLATION_TOKEN_ROUTE = "/app/installations/{installation_id}/access_tokens"
API_VERSION = "2022-11-28"
JSON_MEDIA_TYPE = "application/json; charset=utf-8"
CACHE_CONTROL = "private, max-age=60, s-maxage=60"
DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100
MAX_JIT_LABELS = 100
# GitHub writes registration-token expiry in US Pacific time with milliseconds; a fixed offset
# keeps the output deterministic.
PACIFIC = timezone(timedelta(hours=-8))
INSTALLATION_PERMISSIONS = {
    "administration": "write",
    "metadata": "read",
    "organization_self_hosted_runners": "write",
}

DOCS_ROOT = "https://docs.github.com/rest"
RATE_LIMIT_DOCS = f"{DOCS_ROOT}/overview/rate-limits-for-the-rest-api"
SECONDARY_RATE_LIMIT_DOCS = f"{RATE_LIMIT_DOCS}#about-secondary-rate-limits"

AuthKind = Literal["token", "jwt"]
Json = dict[str, Any]
_T = TypeVar("_T")


class _RequestError(Exception):
    """A request the handler refuses before touching the state (400, 422)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Call:
    """One request as handlers see it: authenticated, with its body read."""

    request: Request
    body: bytes

    @property
    def scope(self) -> Scope:
        params = self.request.path_params
        if "repo" in params:
            return Scope(repository=f"{params['owner']}/{params['repo']}")
        if "org" in params:
            return Scope(organization=params["org"])
        return Scope(enterprise=params["enterprise"])

    def int_param(self, name: str) -> int:
        """A numeric path parameter; a path with a non-number there names nothing."""
        try:
            return int(self.request.path_params[name])
        except ValueError:
            raise NotFoundError(name) from None

    def int_query(self, name: str, default: int) -> int:
        try:
            return int(self.request.query_params.get(name, default))
        except ValueError:
            return default

    def json(self) -> Json:
        if not self.body:
            return {}
        try:
            data = json.loads(self.body)
        except ValueError:
            raise _RequestError(400, "Problems parsing JSON") from None
        if not isinstance(data, dict):
            raise _RequestError(400, "Problems parsing JSON")
        return data

    @property
    def api_root(self) -> str:
        """The API base URL the client used, e.g. `http://host/api/v3`."""
        url = self.request.url
        prefix = GHES_PREFIX if _is_ghes(url.path) else ""
        return f"{url.scheme}://{url.netloc}{prefix}"


Handler = Callable[[Call], Response]


def build_app(state: GitHubState) -> Starlette:
    """GitHub's REST API over `state`, at the root (api.github.com) and under /api/v3 (GHES)."""
    api = _Api(state)
    routes = api.routes()
    return Starlette(
        routes=[Mount(GHES_PREFIX, routes=routes), *routes],
        # GitHub answers unknown paths and unsupported methods alike with a JSON 404.
        exception_handlers={404: api.unrouted, 405: api.unrouted},
    )


class _Api:
    def __init__(self, state: GitHubState) -> None:
        self.state = state

    def routes(self) -> list[BaseRoute]:
        routes: list[BaseRoute] = [
            self._route("POST", INSTALLATION_TOKEN_ROUTE, self.create_installation_token, "jwt")
        ]
        for prefix in SCOPE_PREFIXES:
            runners = f"{prefix}/actions/runners"
            routes += [
                self._route("GET", runners, self.list_runners),
                self._route("POST", f"{runners}/registration-token", self.registration_token),
                self._route("POST", f"{runners}/remove-token", self.remove_token),
                self._route("POST", f"{runners}/generate-jitconfig", self.generate_jitconfig),
                self._route("GET", f"{runners}/{{runner_id}}", self.get_runner),
                self._route("DELETE", f"{runners}/{{runner_id}}", self.delete_runner),
            ]
        for prefix in RUNNER_GROUP_PREFIXES:
            routes.append(
                self._route("GET", f"{prefix}/actions/runner-groups", self.list_runner_groups)
            )
        return routes

    def _route(
        self, method: str, template: str, handler: Handler, auth: AuthKind = "token"
    ) -> Route:
        async def endpoint(request: Request) -> Response:
            return await self.serve(request, template, handler, auth)

        return Route(template, endpoint, methods=[method])

    async def unrouted(self, request: Request, exc: Exception) -> Response:
        return await self.serve(request, None, _not_found, "token")

    # The pipeline every request goes through

    async def serve(
        self, request: Request, route: str | None, handler: Handler, auth: AuthKind
    ) -> Response:
        call = Call(request, await request.body())
        # One request is one atomic step of the state, whatever thread serves it.
        with self.state.lock:
            return self._serve(call, route, handler, auth)

    def _serve(self, call: Call, route: str | None, handler: Handler, auth: AuthKind) -> Response:
        state = self.state
        request = call.request
        path = _api_path(request.url.path)
        caller, auth_failure = self._authenticate(request, auth)
        budget = state.rate_budget(caller)
        fault = state.take_fault(request.method, path)
        secondary = state.secondary_rate_limit()
        request_id = f"{len(state.requests) + 1:08X}"
        if fault is not None:
            response = _error(fault, HTTPStatus(fault).phrase)
        elif secondary is not None:
            status, wait = secondary
            response = _error(
                status,
                "You have exceeded a secondary rate limit. Please wait a few minutes before you "
                "try again. If you reach out to GitHub Support for help, please include the "
                f"request ID {request_id}.",
                SECONDARY_RATE_LIMIT_DOCS,
                {"retry-after": str(math.ceil(wait))},
            )
        elif budget.remaining == 0:
            response = _error(
                403, f"API rate limit exceeded for {_describe(caller)}", RATE_LIMIT_DOCS
            )
        else:
            if auth_failure is not None:
                response = _error(401, auth_failure)
            else:
                response = self._run(handler, call, route)
            # GitHub does not charge a conditional request answered 304.
            if response.status_code != HTTPStatus.NOT_MODIFIED:
                budget = state.charge(caller)
        _stamp(response, budget, request_id)
        state.record_request(request.method, route, path, response.status_code, caller)
        return response

    def _authenticate(self, request: Request, auth: AuthKind) -> tuple[Caller, str | None]:
        """The caller to charge, and GitHub's 401 message when the credentials don't do."""
        host = request.client.host if request.client else "127.0.0.1"
        anonymous = Caller("anonymous", host)
        header = request.headers.get("authorization")
        if not header:
            return anonymous, "Requires authentication"
        scheme, _, credential = header.partition(" ")
        credential = credential.strip()
        if scheme.lower() not in ("token", "bearer") or not credential:
            return anonymous, "Bad credentials"
        if auth == "jwt":
            try:
                return self.state.caller_for_app_jwt(credential), None
            except AuthenticationError as exc:
                return anonymous, str(exc)
        caller = self.state.caller_for_token(credential)
        if caller is None:
            return anonymous, "Bad credentials"
        return caller, None

    def _run(self, handler: Handler, call: Call, route: str | None) -> Response:
        docs = _docs_url(route)
        try:
            return handler(call)
        except NotFoundError:
            return _error(404, "Not Found", docs)
        except RunnerBusyError as exc:
            # GitHub's text, verbatim as actions-runner-controller records it (trailing quote too).
            message = f'Bad request - Runner "{exc.runner_name}" is still running a job"'
            return _error(422, message, docs)
        except NameTakenError as exc:
            return _error(409, str(exc), docs)
        except _RequestError as exc:
            return _error(exc.status, exc.message, docs)

    # Handlers

    def list_runners(self, call: Call) -> Response:
        runners = self.state.runner_records(call.scope)
        name = call.request.query_params.get("name")
        if name is not None:
            runners = [r for r in runners if r.name == name]
        page, links = _paginate(call, runners)
        body = {"total_count": len(runners), "runners": [runner_json(r) for r in page]}
        return _ok(call, body, links)

    def get_runner(self, call: Call) -> Response:
        record = self.state.runner_record(call.scope, call.int_param("runner_id"))
        return _ok(call, runner_json(record))

    def delete_runner(self, call: Call) -> Response:
        self.state.delete_runner(call.scope, call.int_param("runner_id"))
        return Response(status_code=HTTPStatus.NO_CONTENT)

    def registration_token(self, call: Call) -> Response:
        return _created(_runner_token_json(self.state.create_registration_token(call.scope)))

    def remove_token(self, call: Call) -> Response:
        return _created(_runner_token_json(self.state.create_remove_token(call.scope)))

    def generate_jitconfig(self, call: Call) -> Response:
        name, labels, group_id, work_folder = _jit_request(call.json())
        record, encoded = self.state.generate_jit_config(
            call.scope, name, labels, group_id, work_folder
        )
        return _created({"runner": runner_json(record), "encoded_jit_config": encoded})

    def list_runner_groups(self, call: Call) -> Response:
        scope = call.scope
        # Organizations filter by repository; enterprise groups are visible to every organization.
        query = call.request.query_params
        repository = query.get("visible_to_repository") if scope.organization else None
        groups = self.state.runner_groups(scope, visible_to_repository=repository)
        page, links = _paginate(call, groups)
        body = {
            "total_count": len(groups),
            "runner_groups": [runner_group_json(g, scope, call.api_root) for g in page],
        }
        return _ok(call, body, links)

    def create_installation_token(self, call: Call) -> Response:
        call.json()  # down-scoping fields are accepted and ignored, but the JSON must parse
        token = self.state.create_installation_token(call.int_param("installation_id"))
        return _created(
            {
                "token": token.value,
                "expires_at": token.expires_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "permissions": INSTALLATION_PERMISSIONS,
                "repository_selection": "all",
            }
        )


def _not_found(call: Call) -> Response:
    return _error(404, "Not Found")


# Rendering: the REST objects of GitHub's OpenAPI description


def runner_json(record: RunnerRecord) -> Json:
    body: Json = {
        "id": record.id,
        "name": record.name,
        "os": record.os,
        "status": record.status,
        "busy": record.busy,
        "ephemeral": record.ephemeral,
        "runner_group_id": record.runner_group_id,
        "labels": [{"id": lb.id, "name": lb.name, "type": lb.type} for lb in record.labels],
    }
    if record.version is not None:
        body["version"] = record.version
    return body


def runner_group_json(group: RunnerGroup, scope: Scope, api_root: str) -> Json:
    group_url = f"{api_root}{scope.api_path}/actions/runner-groups/{group.id}"
    body: Json = {
        "id": group.id,
        "name": group.name,
        "visibility": group.visibility,
        "default": group.default,
        "runners_url": f"{group_url}/runners",
        "allows_public_repositories": False,
        "restricted_to_workflows": False,
        "selected_workflows": [],
        "workflow_restrictions_read_only": False,
    }
    if scope.organization:
        body["inherited"] = False
        if group.visibility == "selected":
            body["selected_repositories_url"] = f"{group_url}/repositories"
    elif group.visibility == "selected":
        body["selected_organizations_url"] = f"{group_url}/organizations"
    return body


def _runner_token_json(token: IssuedToken) -> Json:
    expires_at = token.expires_at.astimezone(PACIFIC).isoformat(timespec="milliseconds")
    return {"token": token.value, "expires_at": expires_at}


def _jit_request(data: Json) -> tuple[str, list[str], int, str]:
    """The generate-jitconfig body, checked against its schema as GitHub does (422)."""
    for required in ("name", "runner_group_id", "labels"):
        if required not in data:
            raise _RequestError(422, f'Invalid request.\n\n"{required}" wasn\'t supplied.')
    name, group_id, labels = data["name"], data["runner_group_id"], data["labels"]
    work_folder = data.get("work_folder", "_work")
    if not isinstance(name, str) or not name:
        raise _invalid("name", name, "is not a non-empty string")
    if not isinstance(group_id, int) or isinstance(group_id, bool):
        raise _invalid("runner_group_id", group_id, "is not an integer")
    if not isinstance(labels, list) or not all(isinstance(lb, str) and lb for lb in labels):
        raise _invalid("labels", labels, "is not an array of non-empty strings")
    if not 1 <= len(labels) <= MAX_JIT_LABELS:
        raise _invalid("labels", labels, f"must have between 1 and {MAX_JIT_LABELS} items")
    if not isinstance(work_folder, str):
        raise _invalid("work_folder", work_folder, "is not a string")
    return name, labels, group_id, work_folder


def _invalid(field: str, value: object, problem: str) -> _RequestError:
    shown = json.dumps(value)
    return _RequestError(422, f"Invalid request.\n\nFor 'properties/{field}', {shown} {problem}.")


# Responses and headers


def _dump(payload: Json) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode()


def _ok(call: Call, payload: Json, headers: dict[str, str] | None = None) -> Response:
    """A 200 a client may cache, or a 304 when its `If-None-Match` still matches."""
    body = _dump(payload)
    etag = f'W/"{hashlib.sha256(body).hexdigest()}"'
    all_headers = {
        "etag": etag,
        "cache-control": CACHE_CONTROL,
        "vary": "Accept, Authorization, Cookie, X-GitHub-OTP",
        **(headers or {}),
    }
    if etag in _if_none_match(call.request):
        return Response(status_code=HTTPStatus.NOT_MODIFIED, headers=all_headers)
    return Response(body, HTTPStatus.OK, all_headers, media_type=JSON_MEDIA_TYPE)


def _created(payload: Json) -> Response:
    return Response(_dump(payload), HTTPStatus.CREATED, media_type=JSON_MEDIA_TYPE)


def _error(
    status: int,
    message: str,
    documentation_url: str = DOCS_ROOT,
    headers: dict[str, str] | None = None,
) -> Response:
    payload = {"message": message, "documentation_url": documentation_url, "status": str(status)}
    return Response(_dump(payload), status, headers, media_type=JSON_MEDIA_TYPE)


def _stamp(response: Response, budget: RateBudget, request_id: str) -> None:
    headers = response.headers
    headers["x-ratelimit-limit"] = str(budget.limit)
    headers["x-ratelimit-remaining"] = str(budget.remaining)
    headers["x-ratelimit-used"] = str(budget.used)
    headers["x-ratelimit-reset"] = str(math.ceil(budget.reset_at.timestamp()))
    headers["x-ratelimit-resource"] = "core"
    headers["x-github-api-version-selected"] = API_VERSION
    headers["x-github-media-type"] = "github.v3; format=json"
    headers["x-github-request-id"] = request_id


def _paginate(call: Call, items: Sequence[_T]) -> tuple[Sequence[_T], dict[str, str]]:
    """One page of `items` and, when there are several pages, GitHub's RFC 5988 `Link` header."""
    per_page = call.int_query("per_page", DEFAULT_PER_PAGE)
    per_page = DEFAULT_PER_PAGE if per_page < 1 else min(per_page, MAX_PER_PAGE)
    page = max(1, call.int_query("page", 1))
    last = max(1, math.ceil(len(items) / per_page))
    rels: list[tuple[str, int]] = []
    if page > 1:
        rels.append(("prev", page - 1))
    if page < last:
        rels += [("next", page + 1), ("last", last)]
    if page > 1:
        rels.append(("first", 1))
    url = call.request.url
    link = ", ".join(f'<{url.include_query_params(page=n)}>; rel="{rel}"' for rel, n in rels)
    return items[(page - 1) * per_page : page * per_page], ({"link": link} if link else {})


def _if_none_match(request: Request) -> set[str]:
    header = request.headers.get("if-none-match", "")
    return {tag.strip() for tag in header.split(",") if tag.strip()}


def _describe(caller: Caller) -> str:
    if caller.kind == "anonymous":
        return (
            f"{caller.id}. (But here's the good news: Authenticated requests get a higher rate "
            "limit. Check out the documentation for more details.)"
        )
    return f"{caller.kind} ID {caller.id}."


def _docs_url(route: str | None) -> str:
    if route is None:
        return DOCS_ROOT
    if route.startswith("/app/"):
        return f"{DOCS_ROOT}/apps/apps#create-an-installation-access-token-for-an-app"
    if "/runner-groups" in route:
        return f"{DOCS_ROOT}/actions/self-hosted-runner-groups"
    return f"{DOCS_ROOT}/actions/self-hosted-runners"


def _is_ghes(path: str) -> bool:
    return path == GHES_PREFIX or path.startswith(f"{GHES_PREFIX}/")


def _api_path(path: str) -> str:
    """The path as api.github.com would see it, without the GHES prefix."""
    if _is_ghes(path):
        return path[len(GHES_PREFIX) :] or "/"
    return path
