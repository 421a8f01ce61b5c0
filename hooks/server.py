"""Running the hook server: uvicorn, HTTPS and client certificates (mTLS) when asked, and a
plain-HTTP health port beside it.

Metacontroller verifies the server with a controller's `caBundle` and presents its own
certificate with `clientTLS`; cert-manager can issue both. The files are checked at start, so a
wrong path or a key that does not match fails with a clear message instead of on the first call.
The kubelet's probes (and Prometheus) present no client certificate: with mTLS on, they use the
health port, which serves only `/healthz`, `/readyz` and `/metrics` (and then the main port no
longer serves the last two). Renewed certificate files
(cert-manager rewrites the mounted Secret) are loaded into the running server within a minute.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger("arc_hooks")

HEALTH_PATHS = ("/healthz", "/readyz", "/metrics")
PRIVATE_PATHS = frozenset({"/readyz", "/metrics"})
"""Served on the health port alone when there is one (`without_paths`)."""
CERTIFICATE_CHECK_SECONDS = 60.0
GRACEFUL_SHUTDOWN_SECONDS = 20
"""In-flight hook calls may finish (Metacontroller's hook timeout is 10 s)."""


class TlsError(ValueError):
    """The TLS files are incomplete or unusable."""


def tls_options(
    cert_file: str | None, key_file: str | None, client_ca_file: str | None
) -> dict[str, Any]:
    """uvicorn's keyword arguments for these files; empty (plain HTTP) when none is given."""
    if not cert_file and not key_file:
        if client_ca_file:
            raise TlsError("a client CA needs TLS: give a certificate and a key too")
        return {}
    if not cert_file or not key_file:
        raise TlsError("TLS needs both a certificate and its private key")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    for what, path in (("certificate", cert_file), ("private key", key_file)):
        if not Path(path).is_file():
            raise TlsError(f"TLS {what} {path} is not a readable file")
    try:
        context.load_cert_chain(cert_file, key_file)
    except (ssl.SSLError, OSError) as error:
        raise TlsError(f"TLS certificate and key cannot be used together: {error}") from None
    options: dict[str, Any] = {"ssl_certfile": cert_file, "ssl_keyfile": key_file}
    if client_ca_file:
        try:
            context.load_verify_locations(cafile=client_ca_file)
        except (ssl.SSLError, OSError) as error:
            raise TlsError(f"client CA {client_ca_file} cannot be used: {error}") from None
        options |= {"ssl_ca_certs": client_ca_file, "ssl_cert_reqs": ssl.CERT_REQUIRED}
    return options


def serve(
    app: Starlette,
    host: str,
    port: int,
    tls: dict[str, Any],
    health_port: int | None,
) -> None:
    """Serve until SIGTERM or SIGINT; uvicorn stops accepting and lets calls in flight end."""
    main: ASGIApp = app
    companions: list[uvicorn.Server] = []
    if health_port is not None:
        companions.append(_Companion(_config(health_app(app), host, health_port, {})))
        main = without_paths(app, PRIVATE_PATHS)
    config = _config(main, host, port, tls)
    reloader = None
    if tls:
        config.load()
        assert config.ssl is not None
        reloader = CertificateReloader(
            config.ssl, tls["ssl_certfile"], tls["ssl_keyfile"], tls.get("ssl_ca_certs")
        )
    # uvicorn shuts down cleanly, then raises the SIGINT it held back: `uvicorn.run` ends
    # quietly there too, without a traceback.
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve_all(uvicorn.Server(config), companions, reloader))


def without_paths(app: Starlette, paths: frozenset[str]) -> ASGIApp:
    """`app` answering 404 wherever its routes of `paths` would answer. With a health port,
    the main port no longer serves metrics and readiness: on the webhook receiver it is the one
    reachable from the internet, and the metrics name private repositories, workflows and jobs.
    Matched as the routes match, not by comparing paths: a route's pattern takes more than its
    path (Python's `$` matches before a final newline, so `/metrics%0A` reached `/metrics`)."""
    private = [r for r in app.routes if isinstance(r, Route) and r.path in paths]

    async def serve_elsewhere(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and any(
            route.matches(scope)[0] is not Match.NONE for route in private
        ):
            await PlainTextResponse("served on the health port only", status_code=404)(
                scope, receive, send
            )
            return
        await app(scope, receive, send)

    return serve_elsewhere


def health_app(app: Starlette) -> Starlette:
    """The same health, readiness and metrics endpoints, and nothing else."""
    routes = [r for r in app.routes if isinstance(r, Route) and r.path in HEALTH_PATHS]
    return Starlette(routes=routes)


def _config(app: ASGIApp, host: str, port: int, tls: dict[str, Any]) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
        **tls,
    )


class _Companion(uvicorn.Server):
    """A server that leaves the signals to the main one and stops when told."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def _serve_all(
    main: uvicorn.Server, companions: list[uvicorn.Server], reloader: CertificateReloader | None
) -> None:
    running = [asyncio.create_task(companion.serve()) for companion in companions]
    watching = asyncio.create_task(reloader.watch()) if reloader is not None else None
    try:
        await main.serve()
    finally:
        for companion in companions:
            companion.should_exit = True
        await asyncio.gather(*running)
        if watching is not None:
            watching.cancel()


class CertificateReloader:
    """Loads renewed certificate files into the running server's TLS context: new connections
    get the new certificate, and a new client CA is trusted beside the old one."""

    def __init__(
        self, context: ssl.SSLContext, cert_file: str, key_file: str, client_ca: str | None
    ) -> None:
        self.context = context
        self.cert_file = cert_file
        self.key_file = key_file
        self.client_ca = client_ca
        self._seen = self._signature()

    def check(self) -> bool:
        """Reload when a file changed; True when the context now holds what the files say."""
        signature = self._signature()
        if signature == self._seen:
            return False
        try:
            self.context.load_cert_chain(self.cert_file, self.key_file)
            if self.client_ca:
                self.context.load_verify_locations(cafile=self.client_ca)
        except (ssl.SSLError, OSError) as error:
            # Files caught between two writes: keep serving the old ones, try again later.
            log.warning("renewed TLS files not loaded yet: %s", error)
            return False
        self._seen = signature
        log.info("TLS certificate reloaded", extra={"certificate": self.cert_file})
        return True

    async def watch(self) -> None:
        while True:
            await asyncio.sleep(CERTIFICATE_CHECK_SECONDS)
            self.check()

    def _signature(self) -> tuple[tuple[int, int, int] | None, ...]:
        return tuple(
            _file_signature(path) for path in (self.cert_file, self.key_file, self.client_ca)
        )


def _file_signature(path: str | None) -> tuple[int, int, int] | None:
    if path is None:
        return None
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns)
