"""The hook server, assembled: each controller's hooks, GitHub's webhook, health and metrics,
behind the check that only Metacontroller calls the hooks.

Transport lives in `endpoints` (hooks), `webhook.endpoint` and `health`; decisions live in the
controller modules, each of which lists its own hooks (`routes`).
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route

from hooks.autoscaler import controller as autoscaler
from hooks.clock import Clock, SystemClock
from hooks.deployment import controller as deployment
from hooks.deps import MEMBERS_PER_RUNNER, HookDeps
from hooks.endpoints import BodyReading, hook_endpoint
from hooks.events import EventRecorder
from hooks.github.clients import PortBuilder
from hooks.github.credentials import ApiCredentials
from hooks.github.port import GitHubPort
from hooks.github.scaleset.service import ScaleSetPort, scale_sets_from_settings
from hooks.github.shared_lists import RunnerListBoard
from hooks.health import health_routes
from hooks.hook_auth import HookAuthMiddleware, HookCredentials
from hooks.kube.cluster import ClusterKube
from hooks.kube.config_maps import KubeConfigMaps, OnServerLoop
from hooks.kube.port import KubePort
from hooks.metacontroller import HookRoute
from hooks.replicaset import controller as replicaset
from hooks.request_reader import RequestReader
from hooks.runner import controller as runner
from hooks.runnerpod import controller as runnerpod
from hooks.runnerset import controller as runnerset
from hooks.settings import Settings
from hooks.telemetry import record_autoscaler, record_size
from hooks.unconfigured import UnconfiguredGitHub
from hooks.webhook.endpoint import webhook_route
from hooks.workers import InlineCalls, WorkerThreads

CONTROLLERS = (runner, replicaset, deployment, runnerset, runnerpod, autoscaler)


def create_app(
    settings: Settings,
    *,
    github: GitHubPort | None = None,
    clock: Clock | None = None,
    github_blocks: bool = True,
    kube: KubePort | None = None,
    build_credentials_port: PortBuilder | None = None,
    scale_sets: ScaleSetPort | None = None,
    webhook_only: bool = False,
) -> Starlette:
    """The hook server. `github_blocks=False` says the GitHub port never waits on I/O (the
    simulated world's in-process GitHub): hooks then run on the event loop, without threads.
    `kube` is the server's Kubernetes API access, for the webhook receiver, forced deletes and
    the shared runner lists (default: the cluster's, via the pod's service account or a
    kubeconfig).
    `build_credentials_port` makes the port for a resource's `githubAPICredentialsFrom` Secret
    (default: PyGithub, when `github` is not given).
    `webhook_only`: the app of `serve --webhook-only`, whose `/readyz` is the receiver's."""
    clock = clock or SystemClock()
    kube = kube if kube is not None else ClusterKube()
    if github is None:
        board = _runner_list_board(settings, kube, clock)
        build_credentials_port = build_credentials_port or _credentials_ports(settings, clock)
        try:
            github = _github_from_settings(settings, clock, board)
            if scale_sets is None and settings.has_scale_set_credentials:
                scale_sets = scale_sets_from_settings(settings, clock)
        except ValueError as error:
            # The App's key does not read (the message never quotes it): the server still
            # answers, /readyz says why, and every GitHub call fails with the same reason.
            github = UnconfiguredGitHub(str(error))
    deps = HookDeps(
        github,
        clock,
        settings,
        observe_autoscaler=record_autoscaler,
        observe_size=record_size,
        build_credentials_port=build_credentials_port,
        scale_sets=scale_sets,
    )
    workers = WorkerThreads() if github_blocks else InlineCalls()
    credentials = HookCredentials.from_settings(settings)
    hooks: list[HookRoute] = [route for c in CONTROLLERS for route in c.routes(deps)]
    events = EventRecorder(kube, clock)
    reader = RequestReader(settings.hook_memo_runners * MEMBERS_PER_RUNNER)
    reading = BodyReading(reader, settings.hook_max_request_bytes)
    webhook = webhook_route(settings, github, clock, kube, workers)
    if webhook_only:
        # The one Deployment anyone can reach serves no hook, whatever its environment says
        # (it shares the hooks' ConfigMap). It takes deliveries at every other path, as ARC's
        # server does (Go's "/" pattern): payload URLs such as
        # `/actions-runner-controller-github-webhook-server` keep working.
        every_path = Route("/{path:path}", webhook.endpoint, methods=["GET", "POST"])
        routes = [webhook, *health_routes(settings, credentials, webhook_only=True), every_path]
        app = Starlette(routes=routes)
    else:
        routes = [
            Route(h.path, hook_endpoint(h, workers, kube, events, reading), methods=["POST"])
            for h in hooks
        ]
        routes += [webhook, *health_routes(settings, credentials)]
        # Only Metacontroller may call the hooks: refused before anything is read.
        app = Starlette(
            routes=routes,
            middleware=[Middleware(HookAuthMiddleware, credentials=credentials)],
        )
    app.state.request_reader = reader
    return app


def _runner_list_board(settings: Settings, kube: KubePort, clock: Clock) -> RunnerListBoard | None:
    namespace = settings.shared_runner_lists_namespace
    if not namespace:
        return None
    return RunnerListBoard(KubeConfigMaps(kube, OnServerLoop()), namespace, clock)


def _credentials_ports(settings: Settings, clock: Clock) -> PortBuilder:
    def build(credentials: ApiCredentials) -> GitHubPort:
        from hooks.github.factory import github_for_credentials

        return github_for_credentials(settings, clock, credentials)

    return build


def _github_from_settings(
    settings: Settings, clock: Clock, board: RunnerListBoard | None
) -> GitHubPort:
    if not settings.has_github_credentials:
        return UnconfiguredGitHub()
    from hooks.github.factory import github_from_settings

    return github_from_settings(settings, clock, board)
