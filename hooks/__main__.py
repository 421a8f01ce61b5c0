"""The `arc-hooks` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

DEFAULT_CRD_DIR = Path("metacontroller/crds")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="arc-hooks",
        description="GitHub Actions runners on Kubernetes as Metacontroller hooks.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the hook server")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)

    crds = commands.add_parser("crds", help="write the CRDs generated from the models")
    crds.add_argument("--dir", type=Path, default=DEFAULT_CRD_DIR)
    crds.add_argument("--check", action="store_true", help="fail if a committed CRD is stale")

    simulate = commands.add_parser(
        "simulate", help="replay a scenario file in the simulated world (docs/scenarios.md)"
    )
    simulate.add_argument("file", type=Path)
    simulate.add_argument(
        "--json", action="store_true", help="end with the summary as one line of JSON"
    )

    commands.add_parser("demo", help="watch the system at work in the simulated world")

    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args.host, args.port)
    if args.command == "simulate":
        return _simulate(args.file, args.json)
    if args.command == "demo":
        return _demo()
    return _crds(args.dir, args.check)


def _serve(host: str, port: int) -> int:
    import uvicorn

    from hooks.app import create_app
    from hooks.logs import configure_logging
    from hooks.settings import Settings

    settings = Settings()
    secrets = [
        s.get_secret_value()
        for s in (
            settings.github_token,
            settings.github_app_private_key,
            settings.github_webhook_secret_token,
        )
        if s is not None
    ]
    configure_logging(settings.log_level, secrets)
    app = create_app(settings)
    # uvicorn stops accepting on SIGTERM and lets in-flight hook calls finish.
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=20,
    )
    return 0


def _simulate(file: Path, as_json: bool) -> int:
    import json
    import logging

    from hooks.sim.scenario import ScenarioError, load_scenario
    from hooks.sim.world import World

    logging.disable(logging.WARNING)  # the hooks' own log lines would drown the summary
    try:
        scenario = load_scenario(file)
    except ScenarioError as error:
        print(f"arc-hooks simulate: {file}: {error}", file=sys.stderr)
        return 2
    summary = World(scenario).run()
    if as_json:
        print(json.dumps(summary.to_json(), separators=(",", ":")))
    else:
        print(summary.table())
    failed = summary.invariants.failed()
    if failed:
        print(f"invariants failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def _demo() -> int:
    import logging

    from hooks.sim.demo import run_demo

    logging.disable(logging.WARNING)
    summary = run_demo()
    return 0 if summary.invariants.hold() else 1


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
