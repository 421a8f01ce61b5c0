"""REST layer of the fake GitHub: routes, status codes, headers and errors as GitHub sends them.

`GitHubApi.handle` is the whole API as one synchronous call: route, authenticate, apply injected
faults and rate limits, run the handler against the state, then stamp the rate-limit headers and
log the call. The ASGI app (`build_app`) and the in-process port (`arc_sim.github_port`) are
both thin wrappers around it, so HTTP clients and in-process callers can never see different
answers. Handlers only translate between requests and `GitHubState`; the state never sees one.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, timedelta, timezone
from http import HTTPStatus
from typing import Any, Literal, TypeVar

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from arc_sim.github_jobs import SimJob, WorkflowRun
from arc_sim.github_state import (
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
from hooks.clock import format_time
from hooks.github.port import Scope

GHES_PREFIX = "/api/v3"
SCOPE_PREFIXES = ("/repos/{owner}/{repo}", "/orgs/{org}", "/enterprises/{enterprise}")
RUNNER_GROUP_PREFIXES = ("/orgs/{org}", "/enterprises/{enterprise}")
REPO_PREFIX = "/repos/{owner}/{repo}"
INSTALLATION_TOKEN_ROUTE = "/app/installations/{installation_id}/access_tokens"
DOTCOM_API = "https://api.github.com"
DOTCOM_WEB = "https://github.com"
API_VERSION = "2022-11-28"
JSON_MEDIA_TYPE = "application/json; charset=utf-8"
CACHE_CONTROL = "private, max-age=60, s-maxage=60"
DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100
MAX_JIT_LABELS = 100
# GitHub answers a filtered workflow-run search with at most this many results.
MAX_FILTERED_RUNS = 1000
# The `status` filter of the runs list takes a status or a conclusion.
RUN_STATUSES = frozenset({"queued", "in_progress", "completed", "requested", "waiting", "pending"})
RUN_CONCLUSIONS = frozenset(
    {
        "action_required",
        "cancelled",
        "failure",
        "neutral",
        "skipped",
        "stale",
        "success",
        "timed_out",
    }
)
HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
# GitHub writes registration-token expiry in US Pacific time with milliseconds; a fixed offset
# keeps the output deterministic.
PACIFIC = timezone(timedelta(hours=-8))
INSTALLATION_PERMISSIONS = {
    "administration": "write",
    "metadata": "read",
    "organization_self_hosted_runners": "write",
}
ACTOR = "octocat"  # the user whose pushes start every simulated workflow run

DOCS_ROOT = "https://docs.github.com/rest"
RATE_LIMIT_DOCS = f"{DOCS_ROOT}/overview/rate-limits-for-the-rest-api"
NOT_ACCESSIBLE = "Resource not accessible by personal access token"
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
class ApiResponse:
    """An answer of the API: status, headers (lower-case names) and the raw body."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass(frozen=True)
class Call:
    """One request as handlers see it: routed, with its body read."""

    method: str
    path: str  # without the GHES prefix
    params: Mapping[str, str]  # path parameters
    query: Sequence[tuple[str, str]]
    headers: Mapping[str, str]  # lower-case names
    body: bytes
    base_url: str  # scheme://host as the client called it
    ghes: bool

    @property
    def scope(self) -> Scope:
        params = self.params
        if "repo" in params:
            return Scope(repository=f"{params['owner']}/{params['repo']}")
        if "org" in params:
            return Scope(organization=params["org"])
        return Scope(enterprise=params["enterprise"])

    @property
    def repository(self) -> str:
        return f"{self.params['owner']}/{self.params['repo']}"

    @property
    def account(self) -> str | None:
        """The organization or owner the path is in (None for enterprise and app paths)."""
        return self.params.get("org") or self.params.get("owner")

    def int_param(self, name: str) -> int:
        """A numeric path parameter; a path with a non-number there names nothing."""
        try:
            return int(self.params[name])
        except ValueError:
            raise NotFoundError(name) from None

    def query_param(self, name: str) -> str | None:
        # The last of repeated parameters wins, as in Starlette and Rails.
        found = None
        for key, value in self.query:
            if key == name:
                found = value
        return found

    def int_query(self, name: str, default: int) -> int:
        value = self.query_param(name)
        try:
            return default if value is None else int(value)
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
        return self.base_url + (GHES_PREFIX if self.ghes else "")

    @property
    def web_root(self) -> str:
        """Where the HTML pages live: github.com, or the GHES host itself."""
        return self.base_url if self.ghes else DOTCOM_WEB

    def url_with_page(self, page: int) -> str:
        """This request's URL with `page` set (moved to the end, as Starlette does it)."""
        query = [(k, v) for k, v in self.query if k != "page"] + [("page", str(page))]
        path = urllib.parse.quote(self.api_root_path + self.path)
        return f"{self.base_url}{path}?{urllib.parse.urlencode(query)}"

    @property
    def api_root_path(self) -> str:
        return GHES_PREFIX if self.ghes else ""


Handler = Callable[[Call], ApiResponse]


@dataclass(frozen=True)
class ApiRoute:
    method: str
    template: str  # as in GitHub's OpenAPI description, e.g. "/orgs/{org}/actions/runners"
    handler: Handler
    auth: AuthKind
    pattern: re.Pattern[str]


def _compile(template: str) -> re.Pattern[str]:
    pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
    return re.compile(f"^{pattern}$")


def build_app(api: GitHubApi) -> Starlette:
    """The API as an ASGI app, at the root (api.github.com) and under /api/v3 (GHES)."""

    async def endpoint(request: Request) -> Response:
        body = await request.body()
        url = request.url
        answer = api.handle(
            request.method,
            url.path,
            url.query,
            request.headers,
            body,
            base_url=f"{url.scheme}://{url.netloc}",
            client_host=request.client.host if request.client else "127.0.0.1",
        )
        return Response(answer.body, answer.status, answer.headers)

    return Starlette(routes=[Route("/{path:path}", endpoint, methods=list(HTTP_METHODS))])


class GitHubApi:
    """GitHub's REST API over a `GitHubState`, as one synchronous call per request."""

    def __init__(self, state: GitHubState) -> None:
        self.state = state
        self.routes = self._routes()

    def _routes(self) -> list[ApiRoute]:
        table: list[tuple[str, str, Handler, AuthKind]] = [
            ("POST", INSTALLATION_TOKEN_ROUTE, self.create_installation_token, "jwt")
        ]
        for prefix in SCOPE_PREFIXES:
            runners = f"{prefix}/actions/runners"
            table += [
                ("GET", runners, self.list_runners, "token"),
                ("POST", f"{runners}/registration-token", self.registration_token, "token"),
                ("POST", f"{runners}/remove-token", self.remove_token, "token"),
                ("POST", f"{runners}/generate-jitconfig", self.generate_jitconfig, "token"),
                ("GET", f"{runners}/{{runner_id}}", self.get_runner, "token"),
                ("DELETE", f"{runners}/{{runner_id}}", self.delete_runner, "token"),
            ]
        for prefix in RUNNER_GROUP_PREFIXES:
            table.append(
                ("GET", f"{prefix}/actions/runner-groups", self.list_runner_groups, "token")
            )
        actions = f"{REPO_PREFIX}/actions"
        table += [
            ("GET", f"{actions}/runs", self.list_workflow_runs, "token"),
            ("GET", f"{actions}/runs/{{run_id}}", self.get_workflow_run, "token"),
            ("GET", f"{actions}/runs/{{run_id}}/jobs", self.list_run_jobs, "token"),
            ("GET", f"{actions}/jobs/{{job_id}}", self.get_job, "token"),
        ]
        return [
            ApiRoute(method, template, handler, auth, _compile(template))
            for method, template, handler, auth in table
        ]

    # The pipeline every request goes through

    def handle(
        self,
        method: str,
        path: str,
        query: str = "",
        headers: Mapping[str, str] | None = None,
        body: bytes = b"",
        *,
        base_url: str = DOTCOM_API,
        client_host: str = "127.0.0.1",
    ) -> ApiResponse:
        """Answer one request. `path` is decoded and may carry the /api/v3 prefix."""
        method = method.upper()
        ghes = _is_ghes(path)
        api_path = (path[len(GHES_PREFIX) :] or "/") if ghes else path
        route, params = self._match(method, api_path)
        call = Call(
            method=method,
            path=api_path,
            params=params,
            query=urllib.parse.parse_qsl(query, keep_blank_values=True),
            headers={k.lower(): v for k, v in (headers or {}).items()},
            body=body,
            base_url=base_url.rstrip("/"),
            ghes=ghes,
        )
        # One request is one atomic step of the state, whatever thread serves it.
        with self.state.atomic():
            return self._serve(call, route, client_host)

    def _match(self, method: str, path: str) -> tuple[ApiRoute | None, dict[str, str]]:
        # GitHub answers HEAD like GET, without the body (the HTTP server drops it).
        wanted = "GET" if method == "HEAD" else method
        for route in self.routes:
            if route.method == wanted:
                found = route.pattern.match(path)
                if found:
                    return route, found.groupdict()
        return None, {}

    def _serve(self, call: Call, route: ApiRoute | None, client_host: str) -> ApiResponse:
        state = self.state
        auth = route.auth if route is not None else "token"
        template = route.template if route is not None else None
        caller, auth_failure = self._authenticate(call, auth, client_host)
        budget = state.rate_budget(caller)
        fault = state.take_fault(call.method, call.path)
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
            elif route is not None and not self._reaches(caller, call, auth):
                response = _error(403, NOT_ACCESSIBLE)
            elif route is None:
                # GitHub answers unknown paths and unsupported methods alike with a JSON 404.
                response = _error(404, "Not Found")
            else:
                response = self._run(route, call)
            # GitHub does not charge a conditional request answered 304.
            if response.status != HTTPStatus.NOT_MODIFIED:
                budget = state.charge(caller)
        _stamp(response, budget, request_id)
        state.record_request(call.method, template, call.path, response.status, caller)
        return response

    def _reaches(self, caller: Caller, call: Call, auth: AuthKind) -> bool:
        return auth != "token" or self.state.may_reach(caller, call.account)

    def _authenticate(
        self, call: Call, auth: AuthKind, client_host: str
    ) -> tuple[Caller, str | None]:
        """The caller to charge, and GitHub's 401 message when the credentials don't do."""
        anonymous = Caller("anonymous", client_host)
        header = call.headers.get("authorization")
        if not header:
            return anonymous, "Requires authentication"
        scheme, _, credential = header.partition(" ")
        credential = credential.strip()
        if scheme.lower() == "basic" and auth == "token":
            # GitHub takes a username with a PAT as its password.
            credential = _basic_password(credential)
        elif scheme.lower() not in ("token", "bearer"):
            return anonymous, "Bad credentials"
        if not credential:
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

    def _run(self, route: ApiRoute, call: Call) -> ApiResponse:
        docs = _docs_url(route.template)
        try:
            return route.handler(call)
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

    # Handlers: runners, tokens, groups

    def list_runners(self, call: Call) -> ApiResponse:
        runners = self.state.runner_records(call.scope)
        name = call.query_param("name")
        if name is not None:
            runners = [r for r in runners if r.name == name]
        page, links = _paginate(call, runners)
        body = {"total_count": len(runners), "runners": [runner_json(r) for r in page]}
        return _ok(call, body, links)

    def get_runner(self, call: Call) -> ApiResponse:
        record = self.state.runner_record(call.scope, call.int_param("runner_id"))
        return _ok(call, runner_json(record))

    def delete_runner(self, call: Call) -> ApiResponse:
        self.state.delete_runner(call.scope, call.int_param("runner_id"))
        return ApiResponse(HTTPStatus.NO_CONTENT)

    def registration_token(self, call: Call) -> ApiResponse:
        return _created(_runner_token_json(self.state.create_registration_token(call.scope)))

    def remove_token(self, call: Call) -> ApiResponse:
        return _created(_runner_token_json(self.state.create_remove_token(call.scope)))

    def generate_jitconfig(self, call: Call) -> ApiResponse:
        name, labels, group_id, work_folder = _jit_request(call.json())
        record, encoded = self.state.generate_jit_config(
            call.scope, name, labels, group_id, work_folder
        )
        return _created({"runner": runner_json(record), "encoded_jit_config": encoded})

    def list_runner_groups(self, call: Call) -> ApiResponse:
        scope = call.scope
        listed = [(group, False) for group in self._own_runner_groups(call)]
        if scope.organization:
            # An organization also lists what its enterprise shares with it; every repository
            # of the organization may use those here.
            inherited = self.state.inherited_runner_groups(scope.organization)
            listed += [(group, True) for group in inherited]
        page, links = _paginate(call, listed)
        body = {
            "total_count": len(listed),
            "runner_groups": [
                runner_group_json(group, scope, call.api_root, inherited=inherited)
                for group, inherited in page
            ],
        }
        return _ok(call, body, links)

    def _own_runner_groups(self, call: Call) -> list[RunnerGroup]:
        scope = call.scope
        # Only organizations filter by repository, given by its bare name as ARC sends it: a
        # value with an owner names no repository of the organization.
        name = call.query_param("visible_to_repository") if scope.organization else None
        repository = f"{scope.organization}/{name}" if name else None
        return self.state.runner_groups(scope, visible_to_repository=repository)

    def create_installation_token(self, call: Call) -> ApiResponse:
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

    # Handlers: workflow runs and jobs

    def list_workflow_runs(self, call: Call) -> ApiResponse:
        book = self.state.job_book
        runs = sorted(book.runs(call.repository), key=lambda r: r.id, reverse=True)  # newest first
        status = call.query_param("status")
        if status:
            if status not in RUN_STATUSES | RUN_CONCLUSIONS:
                raise _RequestError(422, f"Invalid request.\n\n{status!r} is not a valid status.")
            # The filter takes a status or a conclusion.
            position = 0 if status in RUN_STATUSES else 1
            runs = [r for r in runs if book.run_state(r)[position] == status]
        filters = {"branch": "head_branch", "event": "event", "head_sha": "head_sha"}
        for name, attribute in filters.items():
            wanted = call.query_param(name)
            if wanted:
                runs = [r for r in runs if getattr(r, attribute) == wanted]
        if status or any(call.query_param(name) for name in filters):
            runs = runs[:MAX_FILTERED_RUNS]
        page, links = _paginate(call, runs)
        body = {
            "total_count": len(runs),
            "workflow_runs": [self._run_json(call, run) for run in page],
        }
        return _ok(call, body, links)

    def get_workflow_run(self, call: Call) -> ApiResponse:
        run = self.state.workflow_run(call.repository, call.int_param("run_id"))
        return _ok(call, self._run_json(call, run))

    def list_run_jobs(self, call: Call) -> ApiResponse:
        run = self.state.workflow_run(call.repository, call.int_param("run_id"))
        flt = call.query_param("filter") or "latest"
        if flt not in ("latest", "all"):
            raise _RequestError(422, f"Invalid request.\n\n{flt!r} is not a valid filter.")
        # Runs are never re-run here, so the latest attempt's jobs are all the jobs.
        jobs = self.state.job_book.jobs_of(run)
        page, links = _paginate(call, jobs)
        body = {
            "total_count": len(jobs),
            "jobs": [job_json(j, call.api_root, call.web_root) for j in page],
        }
        return _ok(call, body, links)

    def get_job(self, call: Call) -> ApiResponse:
        job = self.state.job(call.int_param("job_id"))
        if job.repository.casefold() != call.repository.casefold():
            raise NotFoundError(f"job {job.id} in {call.repository}")
        return _ok(call, job_json(job, call.api_root, call.web_root))

    def _run_json(self, call: Call, run: WorkflowRun) -> Json:
        return workflow_run_json(self.state, run, call.api_root, call.web_root)


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


def runner_group_json(
    group: RunnerGroup, scope: Scope, api_root: str, *, inherited: bool = False
) -> Json:
    """A `runner_groups` item as `scope` lists it; an organization's inherited groups are its
    enterprise's, open to all its repositories."""
    group_url = f"{api_root}{scope.api_path}/actions/runner-groups/{group.id}"
    visibility = "all" if inherited else group.visibility
    body: Json = {
        "id": group.id,
        "name": group.name,
        "visibility": visibility,
        "default": group.default,
        "runners_url": f"{group_url}/runners",
        "allows_public_repositories": False,
        "restricted_to_workflows": False,
        "selected_workflows": [],
        "workflow_restrictions_read_only": False,
    }
    if scope.organization:
        body["inherited"] = inherited
        if visibility == "selected":
            body["selected_repositories_url"] = f"{group_url}/repositories"
    elif visibility == "selected":
        body["selected_organizations_url"] = f"{group_url}/organizations"
    return body


def node_id(kind: str, number: int) -> str:
    """A GraphQL node id shaped like GitHub's legacy ones: base64 of "<len>:<Kind><id>"."""
    return base64.b64encode(f"0{len(kind)}:{kind}{number}".encode()).decode()


def simple_user_json(state: GitHubState, login: str, api_root: str, web_root: str) -> Json:
    """`simple-user`: a user or an organization account."""
    account_id = state.account_id("account", login)
    user_type = "User" if login == ACTOR else state.owner_type(login)
    users = f"{api_root}/users/{login}"
    return {
        "login": login,
        "id": account_id,
        "node_id": node_id(user_type, account_id),
        "avatar_url": f"https://avatars.githubusercontent.com/u/{account_id}?v=4",
        "gravatar_id": "",
        "url": users,
        "html_url": f"{web_root}/{login}",
        "followers_url": f"{users}/followers",
        "following_url": f"{users}/following{{/other_user}}",
        "gists_url": f"{users}/gists{{/gist_id}}",
        "starred_url": f"{users}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{users}/subscriptions",
        "organizations_url": f"{users}/orgs",
        "repos_url": f"{users}/repos",
        "events_url": f"{users}/events{{/privacy}}",
        "received_events_url": f"{users}/received_events",
        "type": user_type,
        "site_admin": False,
    }


def minimal_repository_json(
    state: GitHubState, repository: str, api_root: str, web_root: str
) -> Json:
    """`minimal-repository`: every required field, in GitHub's URL shapes."""
    owner, _, name = repository.partition("/")
    repo_id = state.account_id("repository", repository)
    url = f"{api_root}/repos/{repository}"
    templated = {
        "archive_url": "/{archive_format}{/ref}",
        "assignees_url": "/assignees{/user}",
        "blobs_url": "/git/blobs{/sha}",
        "branches_url": "/branches{/branch}",
        "collaborators_url": "/collaborators{/collaborator}",
        "comments_url": "/comments{/number}",
        "commits_url": "/commits{/sha}",
        "compare_url": "/compare/{base}...{head}",
        "contents_url": "/contents/{+path}",
        "contributors_url": "/contributors",
        "deployments_url": "/deployments",
        "downloads_url": "/downloads",
        "events_url": "/events",
        "forks_url": "/forks",
        "git_commits_url": "/git/commits{/sha}",
        "git_refs_url": "/git/refs{/sha}",
        "git_tags_url": "/git/tags{/sha}",
        "hooks_url": "/hooks",
        "issue_comment_url": "/issues/comments{/number}",
        "issue_events_url": "/issues/events{/number}",
        "issues_url": "/issues{/number}",
        "keys_url": "/keys{/key_id}",
        "labels_url": "/labels{/name}",
        "languages_url": "/languages",
        "merges_url": "/merges",
        "milestones_url": "/milestones{/number}",
        "notifications_url": "/notifications{?since,all,participating}",
        "pulls_url": "/pulls{/number}",
        "releases_url": "/releases{/id}",
        "stargazers_url": "/stargazers",
        "statuses_url": "/statuses/{sha}",
        "subscribers_url": "/subscribers",
        "subscription_url": "/subscription",
        "tags_url": "/tags",
        "teams_url": "/teams",
        "trees_url": "/git/trees{/sha}",
    }
    return {
        "id": repo_id,
        "node_id": node_id("Repository", repo_id),
        "name": name,
        "full_name": repository,
        "owner": simple_user_json(state, owner, api_root, web_root),
        "private": True,
        "html_url": f"{web_root}/{repository}",
        "description": None,
        "fork": False,
        "url": url,
        **{key: url + suffix for key, suffix in templated.items()},
    }


def workflow_run_json(state: GitHubState, run: WorkflowRun, api_root: str, web_root: str) -> Json:
    """`workflow-run`, with its status and conclusion derived from its jobs."""
    book = state.job_book
    status, conclusion = book.run_state(run)
    url = f"{api_root}/repos/{run.repository}/actions/runs/{run.id}"
    repository = minimal_repository_json(state, run.repository, api_root, web_root)
    actor = simple_user_json(state, ACTOR, api_root, web_root)
    return {
        "id": run.id,
        "name": run.workflow_name,
        "node_id": node_id("WorkflowRun", run.id),
        "head_branch": run.head_branch,
        "head_sha": run.head_sha,
        "path": run.path,
        "display_title": f"Simulated push {run.run_number}",
        "run_number": run.run_number,
        "run_attempt": run.run_attempt,
        "event": run.event,
        "status": status,
        "conclusion": conclusion,
        "workflow_id": run.workflow_id,
        "url": url,
        "html_url": f"{web_root}/{run.repository}/actions/runs/{run.id}",
        "pull_requests": [],
        "created_at": format_time(run.created_at),
        "updated_at": format_time(book.run_updated_at(run)),
        "run_started_at": format_time(run.created_at),
        "actor": actor,
        "triggering_actor": actor,
        "jobs_url": f"{url}/jobs",
        "logs_url": f"{url}/logs",
        "check_suite_url": f"{api_root}/repos/{run.repository}/check-suites/{run.id}",
        "artifacts_url": f"{url}/artifacts",
        "cancel_url": f"{url}/cancel",
        "rerun_url": f"{url}/rerun",
        "previous_attempt_url": None,
        "workflow_url": f"{api_root}/repos/{run.repository}/actions/workflows/{run.workflow_id}",
        "head_commit": {
            "id": run.head_sha,
            "tree_id": hashlib.sha1(run.head_sha.encode()).hexdigest(),
            "message": f"Simulated push {run.run_number}",
            "timestamp": format_time(run.created_at),
            "author": {"name": "Mona Octocat", "email": "octocat@github.com"},
            "committer": {"name": "GitHub", "email": "noreply@github.com"},
        },
        "repository": repository,
        "head_repository": repository,
    }


def job_json(job: SimJob, api_root: str, web_root: str) -> Json:
    """`job` of the REST API, which is also the `workflow_job` of the webhooks.

    The runner fields are null until a runner takes the job; GitHub reports a queued job's
    `started_at` as its creation time.
    """
    repo_url = f"{api_root}/repos/{job.repository}"
    created = format_time(job.queued_at)
    started = format_time(job.started_at) if job.started_at else created
    return {
        "id": job.id,
        "run_id": job.run_id,
        "run_url": f"{repo_url}/actions/runs/{job.run_id}",
        "run_attempt": job.run_attempt,
        "node_id": node_id("CheckRun", job.id),
        "head_sha": job.head_sha,
        "head_branch": job.head_branch,
        "url": f"{repo_url}/actions/jobs/{job.id}",
        "html_url": f"{web_root}/{job.repository}/actions/runs/{job.run_id}/job/{job.id}",
        "status": job.status,
        "conclusion": job.conclusion,
        "created_at": created,
        "started_at": started,
        "completed_at": format_time(job.completed_at) if job.completed_at else None,
        "name": job.name,
        "steps": _steps(job, started),
        "check_run_url": f"{repo_url}/check-runs/{job.id}",
        "labels": list(job.labels),
        "runner_id": job.runner_id,
        "runner_name": job.runner_name,
        "runner_group_id": job.runner_group_id,
        "runner_group_name": job.runner_group_name,
        "workflow_name": job.workflow_name,
    }


def _steps(job: SimJob, started: str) -> list[Json]:
    """Two steps: setting up, then the job's own work."""
    if job.status == "queued":
        return []
    done = format_time(job.completed_at) if job.completed_at else None
    setup = {
        "name": "Set up job",
        "number": 1,
        "status": "completed",
        "conclusion": "success",
        "started_at": started,
        "completed_at": started,
    }
    work = {
        "name": "Run the workload",
        "number": 2,
        "status": job.status,
        "conclusion": job.conclusion,
        "started_at": started,
        "completed_at": done,
    }
    return [setup, work]


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
    return orjson.dumps(payload)


def _ok(call: Call, payload: Json, headers: dict[str, str] | None = None) -> ApiResponse:
    """A 200 a client may cache, or a 304 when its `If-None-Match` still matches."""
    body = _dump(payload)
    etag = f'W/"{hashlib.sha256(body).hexdigest()}"'
    all_headers = {
        "etag": etag,
        "cache-control": CACHE_CONTROL,
        "vary": "Accept, Authorization, Cookie, X-GitHub-OTP",
        **(headers or {}),
    }
    if etag in _if_none_match(call):
        return ApiResponse(HTTPStatus.NOT_MODIFIED, all_headers)
    return ApiResponse(HTTPStatus.OK, {**all_headers, "content-type": JSON_MEDIA_TYPE}, body)


def _created(payload: Json) -> ApiResponse:
    return ApiResponse(HTTPStatus.CREATED, {"content-type": JSON_MEDIA_TYPE}, _dump(payload))


def _error(
    status: int,
    message: str,
    documentation_url: str = DOCS_ROOT,
    headers: dict[str, str] | None = None,
) -> ApiResponse:
    payload = {"message": message, "documentation_url": documentation_url, "status": str(status)}
    all_headers = {**(headers or {}), "content-type": JSON_MEDIA_TYPE}
    return ApiResponse(status, all_headers, _dump(payload))


def _stamp(response: ApiResponse, budget: RateBudget, request_id: str) -> None:
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
    link = ", ".join(f'<{call.url_with_page(n)}>; rel="{rel}"' for rel, n in rels)
    return items[(page - 1) * per_page : page * per_page], ({"link": link} if link else {})


def _if_none_match(call: Call) -> set[str]:
    header = call.headers.get("if-none-match", "")
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
    if route.endswith("/jobs") or "/actions/jobs/" in route:
        return f"{DOCS_ROOT}/actions/workflow-jobs"
    if "/actions/runs" in route:
        return f"{DOCS_ROOT}/actions/workflow-runs"
    return f"{DOCS_ROOT}/actions/self-hosted-runners"


def _is_ghes(path: str) -> bool:
    return path == GHES_PREFIX or path.startswith(f"{GHES_PREFIX}/")


def _basic_password(credential: str) -> str:
    """The password of a basic-auth credential (`base64(user:password)`); "" when unreadable."""
    try:
        pair = base64.b64decode(credential, validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return ""
    user, colon, password = pair.partition(":")
    return password if colon and user else ""
