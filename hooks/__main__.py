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

    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args.host, args.port)
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
