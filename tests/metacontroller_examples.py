"""Metacontroller's own examples (tests/fixtures/metacontroller_examples, see NOTICE there) run
through the emulator.

An example's hook is a `BaseHTTPRequestHandler` subclass in its `sync.py`, served by
`HTTPServer(('', 80), Controller)`. Here it is loaded without that server (the module runs with
`http.server.HTTPServer` replaced by one that only takes note of the handler), and
`HandlerTransport` hands it each call as the bytes of an HTTP request on an in-memory
connection, then reads its answer back as an HTTP response: the handler's own request parsing
and response writing run, only the socket is not real.
"""

from __future__ import annotations

import http.client
import http.server
import io
import logging
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast
from unittest import mock
from urllib.parse import urlsplit

import yaml

from arc_sim.metacontroller import HookReply, HookUnreachable

EXAMPLES = Path(__file__).resolve().parent / "fixtures" / "metacontroller_examples"

Handler = type[http.server.BaseHTTPRequestHandler]


def load_hook(example: str) -> Handler:
    """The `Controller` handler class of an example's `manifest/sync.py`."""
    path = EXAMPLES / example / "manifest" / "sync.py.txt"
    served: list[Handler] = []

    class NoServer:
        def __init__(self, address: object, handler: Handler) -> None:
            served.append(handler)

        def serve_forever(self) -> None:
            pass

    module = types.ModuleType(f"metacontroller_example_{example.replace('-', '_')}")
    module.__file__ = str(path)
    code = compile(path.read_text(encoding="utf-8"), str(path), "exec")
    with (
        mock.patch.object(http.server, "HTTPServer", NoServer),
        mock.patch.object(logging, "basicConfig"),  # the example's own, at import: not here
    ):
        exec(code, module.__dict__)
    handler = module.__dict__.get("Controller")
    assert isinstance(handler, type) and issubclass(handler, http.server.BaseHTTPRequestHandler)
    assert all(each is handler for each in served)
    return handler


def documents(example: str, *paths: str) -> list[dict[str, Any]]:
    """The YAML documents of an example's files, in order."""
    found: list[dict[str, Any]] = []
    for path in paths:
        text = (EXAMPLES / example / path).read_text(encoding="utf-8")
        found.extend(doc for doc in yaml.safe_load_all(text) if isinstance(doc, dict))
    return found


class _Connection:
    """The socket a handler reads its request from and writes its answer to."""

    def __init__(self, received: bytes) -> None:
        self._received = received
        self.sent = bytearray()

    def makefile(self, mode: str, buffering: int = -1) -> io.BytesIO:
        assert "r" in mode, mode
        return io.BytesIO(self._received)

    def sendall(self, data: bytes) -> None:
        self.sent += data


class HandlerTransport:
    """A `HookTransport` calling a request handler class in process."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.calls: list[str] = []

    def post(
        self, url: str, body: bytes, timeout: float, headers: Mapping[str, str] | None = None
    ) -> HookReply:
        parts = urlsplit(url)
        path = parts.path or "/"
        self.calls.append(path)
        lines = [
            f"POST {path} HTTP/1.1",
            f"Host: {parts.netloc}",
            "Content-Type: application/json",
            f"Content-Length: {len(body)}",
            "Connection: close",
            *(f"{name}: {value}" for name, value in (headers or {}).items()),
        ]
        connection = _Connection("\r\n".join(lines).encode() + b"\r\n\r\n" + body)
        self.handler(cast(Any, connection), ("127.0.0.1", 50000), cast(Any, None))
        reply = http.client.HTTPResponse(cast(Any, _Connection(bytes(connection.sent))))
        try:
            reply.begin()
        except http.client.HTTPException as error:
            raise HookUnreachable(f"{url}: no HTTP answer ({error!r})") from error
        answer = reply.read()
        return reply.status, {name.lower(): value for name, value in reply.getheaders()}, answer
