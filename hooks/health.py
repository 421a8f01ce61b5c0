"""`/healthz`, `/readyz` and `/metrics`: what probes and scrapers read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from hooks.github.credentials import UNUSABLE_APP_KEY, app_key_signs
from hooks.github.pygithub_adapter import load_private_key
from hooks.hook_auth import HookCredentials
from hooks.metrics import REGISTRY
from hooks.settings import CREDENTIALS_HINT, Settings


def health_routes(
    settings: Settings, credentials: HookCredentials, *, webhook_only: bool = False
) -> list[Route]:
    """`webhook_only`: the webhook receiver's (`serve --webhook-only`), whose readiness is
    its own: it serves no hook, and GitHub's credentials only refine what it decides."""
    readyz = _receiver_readyz(settings) if webhook_only else _readyz(settings, credentials)
    return [
        Route("/healthz", _healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", _metrics, methods=["GET"]),
    ]


async def _healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


def _readyz(settings: Settings, credentials: HookCredentials) -> Callable[[Request], Any]:
    """Not ready while hooks would be refused or could not reach GitHub."""

    app_key_usable = _app_key_usable(settings)

    async def endpoint(request: Request) -> Response:
        reasons = []
        if not credentials.ready:
            reasons.append(credentials.not_ready_reason())
        if not settings.has_github_credentials:
            reasons.append(f"no GitHub credentials ({CREDENTIALS_HINT})")
        elif not app_key_usable:
            reasons.append(f"GITHUB_APP_PRIVATE_KEY {UNUSABLE_APP_KEY}")
        return _readiness(reasons)

    return endpoint


def _receiver_readyz(settings: Settings) -> Callable[[Request], Any]:
    """Not ready while every delivery would be refused (no secret to check signatures with),
    or while the runner-group lookups it is configured for could not sign in to GitHub."""

    app_key_usable = _app_key_usable(settings)

    async def endpoint(request: Request) -> Response:
        reasons = []
        # An empty secret is none, as the receiver reads it.
        if not settings.github_webhook_secret_token and not settings.webhook_allow_unsigned:
            reasons.append(
                "no webhook secret (set GITHUB_WEBHOOK_SECRET_TOKEN, or "
                "WEBHOOK_ALLOW_UNSIGNED=true to accept unsigned deliveries)"
            )
        looks_up_groups = settings.webhook_runner_group_visibility
        if looks_up_groups and settings.has_github_credentials and not app_key_usable:
            reasons.append(f"GITHUB_APP_PRIVATE_KEY {UNUSABLE_APP_KEY}")
        return _readiness(reasons)

    return endpoint


def _readiness(reasons: list[str]) -> Response:
    if reasons:
        return PlainTextResponse("not ready: " + "; ".join(reasons), status_code=503)
    return PlainTextResponse("ready")


async def _metrics(request: Request) -> Response:
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)


def _app_key_usable(settings: Settings) -> bool:
    """The server's GitHub App key, when the App is what it calls GitHub with, can sign. Read
    once: a key that cannot would fail every call, so the replica takes no traffic."""
    if settings.basic_auth is not None:
        return True
    if settings.github_token is not None and settings.github_token.get_secret_value():
        return True
    if settings.github_app_private_key is None:
        return True
    try:
        pem = load_private_key(settings.github_app_private_key.get_secret_value())
    except ValueError:
        return False
    return app_key_signs(pem)
