"""The `arc-hooks` command line."""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, entry_points, version
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hooks.settings import Settings

DEFAULT_CRD_DIR = Path("metacontroller/crds")
COMMANDS_GROUP = "arc_hooks.commands"
"""Entry points that add commands: each is called with the subcommands and returns the
command's handler. The simulated world registers `simulate` and `demo` this way."""

Command = Callable[[argparse.Namespace], int]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="arc-hooks",
        description="GitHub Actions runners on Kubernetes as Metacontroller hooks.",
        epilog="exit status: 2 for a usage error (an unknown command or option, a missing "
        "argument); `arc-hooks COMMAND --help` gives each command's others",
    )
    parser.add_argument("--version", action="version", version=f"arc-hooks {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser(
        "serve",
        help="run the hook server",
        description="Serve Metacontroller's hooks, GitHub's webhook, /healthz, /readyz and "
        "/metrics. Settings come from the environment (README, Configuration).",
        epilog="exit status: 0 after a clean shutdown (SIGTERM or SIGINT); 2 for a usage "
        "error, invalid settings in the environment or unusable TLS files; 3 when a port "
        "cannot be listened on (uvicorn's startup failure)",
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: %(default)s)"
    )
    serve.add_argument(
        "--port", type=int, default=8080, help="port to listen on (default: %(default)s)"
    )
    serve.add_argument(
        "--tls-cert",
        metavar="FILE",
        help="serve HTTPS with this PEM certificate (default: HOOK_TLS_CERT_FILE)",
    )
    serve.add_argument(
        "--tls-key", metavar="FILE", help="its PEM private key (default: HOOK_TLS_KEY_FILE)"
    )
    serve.add_argument(
        "--tls-client-ca",
        metavar="FILE",
        help="require client certificates signed by this CA (mTLS; default: "
        "HOOK_TLS_CLIENT_CA_FILE)",
    )
    serve.add_argument(
        "--health-port",
        type=int,
        metavar="PORT",
        help="also serve /healthz, /readyz and /metrics over plain HTTP on this port (for "
        "probes and scrapers without a client certificate; default: HOOK_HEALTH_PORT)",
    )
    serve.add_argument(
        "--webhook-only",
        action="store_true",
        help="serve GitHub's webhook (at /webhook/github, and as ARC's server at any other "
        "path) and the health endpoints, and no hook, whatever the environment says: for the "
        "receiver GitHub reaches",
    )

    listen = commands.add_parser(
        "listen",
        help="run the scale-set listener",
        description="For each RunnerDeployment or RunnerSet in scale-set mode (annotation "
        "arc-hooks.dev/scale-set), hold its runner scale set's message session, acquire the "
        "jobs GitHub offers it and write how many are assigned on its "
        "HorizontalRunnerAutoscaler. No public endpoint is needed. GitHub credentials come "
        "from the environment, as for `serve`.",
        epilog="exit status: 0 after a clean stop (SIGTERM or SIGINT; the message sessions are "
        "deleted first); 1 when the metrics port cannot be listened on; 2 for a usage error, "
        "invalid settings in the environment or no GitHub credentials",
    )
    listen.add_argument(
        "--namespace",
        help="only RunnerDeployments and RunnerSets of this namespace (default: all)",
    )
    listen.add_argument(
        "--metrics-port",
        type=int,
        default=8080,
        help="serve /metrics on this port; 0: none (default: %(default)s)",
    )

    crds = commands.add_parser(
        "crds",
        help="write the CRDs generated from the models",
        description="Write the CustomResourceDefinitions generated from the resource models, "
        "one YAML file per CRD, and print each path written; with --check, write nothing and "
        "list the files that are stale or missing.",
        epilog="exit status: 0 when the CRDs were written, or with --check when every one is "
        "up to date; 1 with --check when one is stale or missing; 2 for a usage error",
    )
    crds.add_argument(
        "--dir",
        type=Path,
        default=DEFAULT_CRD_DIR,
        metavar="DIR",
        help="directory of the CRD files, created if missing (default: %(default)s, relative "
        "to the current directory)",
    )
    crds.add_argument(
        "--check",
        action="store_true",
        help="write nothing; fail if a CRD file in DIR is stale or missing",
    )

    plugins = plugin_commands(commands)

    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(
            args.host,
            args.port,
            args.tls_cert,
            args.tls_key,
            args.tls_client_ca,
            args.health_port,
            webhook_only=args.webhook_only,
        )
    if args.command == "listen":
        return _listen(args.namespace, args.metrics_port)
    if args.command in plugins:
        return _until_interrupted(plugins[args.command], args)
    return _crds(args.dir, args.check)


def _until_interrupted(command: Command, args: argparse.Namespace) -> int:
    """A simulation stopped with Ctrl-C ends with a line saying so, not a traceback."""
    try:
        return command(args)
    except KeyboardInterrupt:
        # What was under way is abandoned: its unfinished coroutines would warn at exit.
        warnings.filterwarnings("ignore", "coroutine .* was never awaited", RuntimeWarning)
        print(f"arc-hooks {args.command}: interrupted", file=sys.stderr)
        return 130


def _version() -> str:
    try:
        return version("arc-hooks")
    except PackageNotFoundError:
        return "unknown"


def plugin_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> dict[str, Command]:
    handlers: dict[str, Command] = {}
    for entry in entry_points(group=COMMANDS_GROUP):
        try:
            add = entry.load()
        except ImportError:
            continue  # declared by a package whose code is not installed (the image)
        handlers[entry.name] = add(commands)
    return handlers


def _serve(
    host: str,
    port: int,
    tls_cert: str | None,
    tls_key: str | None,
    tls_client_ca: str | None,
    health_port: int | None,
    *,
    webhook_only: bool = False,
) -> int:
    import logging

    from hooks.app import create_app
    from hooks.hook_auth import HookCredentials
    from hooks.logs import configure_logging
    from hooks.server import TlsError, serve, tls_options

    settings = _settings("serve")
    if settings is None:
        return 2
    secrets = settings.github_secrets + [
        s.get_secret_value()
        for s in (settings.github_webhook_secret_token, settings.hook_bearer_token)
        if s is not None
    ]
    # The hook tokens mounted as files, as they are at start.
    secrets += [token.decode() for token in HookCredentials.from_settings(settings).accepted()]
    configure_logging(settings.log_level, secrets)
    try:
        tls = tls_options(
            tls_cert or settings.tls_cert_file,
            tls_key or settings.tls_key_file,
            tls_client_ca or settings.tls_client_ca_file,
        )
    except TlsError as error:
        print(f"arc-hooks serve: {error}", file=sys.stderr)
        return 2
    credentials = HookCredentials.from_settings(settings)
    log = logging.getLogger("arc_hooks")
    if webhook_only:
        log.info("serving GitHub's webhook only, at every path but the health endpoints")
    elif not credentials.accepted():
        if credentials.allows_anyone:
            log.warning(
                "HOOKS_ALLOW_UNAUTHENTICATED=true and no hook credential: any caller that "
                "reaches this server can call the hooks (for local experiments only)"
            )
        else:
            log.warning(
                "hooks will be refused until a credential is configured: %s",
                credentials.not_ready_reason(),
            )
    serve(
        create_app(settings, webhook_only=webhook_only),
        host,
        port,
        tls,
        health_port or settings.health_port,
    )
    return 0


def _listen(namespace: str | None, metrics_port: int) -> int:
    import signal

    from prometheus_client import start_http_server

    from hooks.listener.metrics import LISTENER_REGISTRY
    from hooks.listener.run import listener_from_settings
    from hooks.logs import configure_logging

    settings = _settings("listen")
    if settings is None:
        return 2
    configure_logging(settings.log_level, settings.github_secrets)
    if not settings.has_scale_set_credentials:
        print(
            "arc-hooks listen: no GitHub credentials for runner scale sets: set GITHUB_TOKEN, "
            "or GITHUB_APP_ID, GITHUB_APP_INSTALLATION_ID and GITHUB_APP_PRIVATE_KEY (basic "
            "auth does not reach them)",
            file=sys.stderr,
        )
        return 2
    process = listener_from_settings(settings, namespace)
    if metrics_port:
        try:
            start_http_server(metrics_port, registry=LISTENER_REGISTRY)
        except OSError as error:
            print(f"arc-hooks listen: metrics port {metrics_port}: {error}", file=sys.stderr)
            return 1
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: process.stop_requested.set())
    process.run()  # a clean stop deletes the sessions: another replica takes over at once
    return 0


def _settings(command: str) -> Settings | None:
    """The settings from the environment; None, after saying why on stderr, when they are
    invalid. The values given are left out of the message: they may be secrets."""
    from pydantic import ValidationError
    from pydantic_settings import SettingsError

    from hooks.settings import Settings

    try:
        return Settings()
    except ValidationError as error:
        for problem in error.errors(include_url=False, include_input=False):
            where = ".".join(str(part) for part in problem["loc"]) or "settings"
            print(f"arc-hooks {command}: {where}: {problem['msg']}", file=sys.stderr)
    except SettingsError as error:
        print(f"arc-hooks {command}: {error}", file=sys.stderr)
    return None


def _crds(directory: Path, check: bool) -> int:
    from hooks.resources.crd import check_crds, write_crds

    if check:
        stale = check_crds(directory)
        for name in stale:
            print(f"stale or missing: {directory / name} (run `arc-hooks crds`)", file=sys.stderr)
        return 1 if stale else 0
    for path in write_crds(directory):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
