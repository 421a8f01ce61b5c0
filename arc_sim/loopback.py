"""Serve an ASGI app on real HTTP over loopback, for clients that only speak HTTP (PyGithub)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp

POLL_INTERVAL_SECONDS = 0.01


@contextmanager
def serve_loopback(app: ASGIApp, *, timeout: float = 10.0) -> Iterator[str]:
    """Run `app` under uvicorn on 127.0.0.1 and an OS-assigned port; yield its base URL.

    The server runs on a background thread and is shut down when the block exits.
    """
    # IPPROTO_TCP given explicitly: asyncio sets TCP_NODELAY only on sockets whose protocol
    # is known, and without it every request on a kept-alive connection waits for a delayed ACK.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Bound but not yet listening: connections are refused until uvicorn serves on it, so the
    # first connection that succeeds means the server is up.
    sock.bind(("127.0.0.1", 0))
    host, port = sock.getsockname()
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=int(timeout),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=f"loopback-{port}", daemon=True
    )
    thread.start()
    try:
        _wait_until_accepting(host, port, thread, timeout)
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout)
        if thread.is_alive():
            server.force_exit = True
            thread.join(timeout)
        sock.close()


def _wait_until_accepting(host: str, port: int, thread: threading.Thread, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not thread.is_alive():
            raise RuntimeError(f"the server for {host}:{port} stopped while starting")
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except ConnectionRefusedError:
            time.sleep(POLL_INTERVAL_SECONDS)
    raise TimeoutError(f"the server for {host}:{port} did not accept connections in {timeout} s")
