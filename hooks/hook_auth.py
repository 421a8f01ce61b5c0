"""Only Metacontroller may call the hooks: a Bearer credential checked on every hook path.

A hook answer can hold registration material, and a finalize call unregisters runners, so a
caller that is not Metacontroller must be refused before anything is read or asked of GitHub.
Metacontroller sends `Authorization: Bearer <token>` on every call when its controller names a
Secret (`authorization.secretRef`, directly on the hook or in `endpointConfigs`).

The accepted tokens come from `HOOK_BEARER_TOKEN`, or from the files named by
`HOOK_BEARER_TOKEN_FILE` and `HOOK_BEARER_TOKEN_PREVIOUS_FILE` (a mounted Secret). Files are
read again whenever they change, so a rotated Secret takes effect without a restart; the
previous token covers the time until Metacontroller, which resolves the credential when a
controller starts, sends the new one.

`check_authorization` decides (pure); `HookCredentials` keeps the tokens; `HookAuthMiddleware`
refuses at the HTTP edge, before the request body is read.
"""

from __future__ import annotations

import enum
import hmac
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from hooks.metrics import HOOK_REFUSALS
from hooks.settings import Settings

log = logging.getLogger("arc_hooks.hooks")

HOOK_PATH_PREFIXES = ("/sync/", "/finalize/", "/customize/")
"""Every Metacontroller hook; health, metrics and the (signed) GitHub webhook are not hooks."""

SCHEME = "bearer"

HOW_TO_CONFIGURE = (
    "set HOOK_BEARER_TOKEN or HOOK_BEARER_TOKEN_FILE to the token Metacontroller sends "
    "(authorization.secretRef in the controllers), or HOOKS_ALLOW_UNAUTHENTICATED=true for "
    "local experiments"
)


class Verdict(enum.Enum):
    ALLOWED = "allowed"
    NOT_CONFIGURED = "not_configured"  # 503: the server has no token to compare with
    MISSING = "missing"  # 401: no Authorization header
    WRONG_SCHEME = "wrong_scheme"  # 401: not `Bearer ...`
    WRONG_TOKEN = "wrong_token"  # 401

    @property
    def status(self) -> int:
        if self is Verdict.ALLOWED:
            return 200
        return 503 if self is Verdict.NOT_CONFIGURED else 401

    @property
    def message(self) -> str:
        return _MESSAGES[self]


_MESSAGES = {
    Verdict.ALLOWED: "",
    Verdict.NOT_CONFIGURED: "hooks are refused: no hook credential is configured; "
    + HOW_TO_CONFIGURE,
    Verdict.MISSING: "an Authorization header with a Bearer token is required",
    Verdict.WRONG_SCHEME: "the Authorization header must use the Bearer scheme",
    Verdict.WRONG_TOKEN: "the Bearer token is not accepted",
}


def check_authorization(header: bytes | None, accepted: Sequence[bytes]) -> Verdict:
    """Whether a request with this Authorization header may call a hook.

    Every accepted token is compared, each in constant time, so the answer's timing tells
    neither the token nor which one matched."""
    if not accepted:
        return Verdict.NOT_CONFIGURED
    if header is None or not header.strip():
        return Verdict.MISSING
    scheme, _, presented = header.strip().partition(b" ")
    if scheme.lower() != SCHEME.encode():
        return Verdict.WRONG_SCHEME
    presented = presented.strip()
    matched = False
    for token in accepted:
        matched |= hmac.compare_digest(presented, token)
    return Verdict.ALLOWED if matched and presented else Verdict.WRONG_TOKEN


@dataclass(frozen=True)
class _FileReading:
    signature: tuple[int, int, int] | None  # (inode, size, mtime) of what was read
    token: bytes | None


class _TokenFile:
    """One token file, read again when its inode, size or modification time changes (the
    kubelet replaces a mounted Secret's files through a symlink swap)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._reading = _FileReading(None, None)
        self._lock = threading.Lock()

    def token(self) -> bytes | None:
        try:
            stat = os.stat(self.path)
        except OSError:
            return None
        signature = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        reading = self._reading
        if reading.signature == signature:
            return reading.token
        with self._lock:
            try:
                text = self.path.read_bytes().strip()
            except OSError:
                return None
            self._reading = _FileReading(signature, text or None)
            return self._reading.token


class HookCredentials:
    """The tokens a hook call may present, and whether unauthenticated calls are allowed."""

    def __init__(
        self,
        *,
        token: str | None = None,
        files: Sequence[Path] = (),
        allow_unauthenticated: bool = False,
    ) -> None:
        self._fixed = token.strip().encode() if token and token.strip() else None
        # Set, even blank (a Secret's key emptied): configured, so never open to anyone.
        self._token_configured = token is not None
        self._files = [_TokenFile(path) for path in files]
        self.allow_unauthenticated = allow_unauthenticated

    @classmethod
    def from_settings(cls, settings: Settings) -> HookCredentials:
        token = settings.hook_bearer_token
        files = [
            Path(path)
            for path in (settings.hook_bearer_token_file, settings.hook_bearer_token_previous_file)
            if path
        ]
        return cls(
            token=token.get_secret_value() if token is not None else None,
            files=files,
            allow_unauthenticated=settings.hooks_allow_unauthenticated,
        )

    def accepted(self) -> list[bytes]:
        tokens = [self._fixed] if self._fixed else []
        tokens += [token for file in self._files if (token := file.token())]
        return tokens

    @property
    def allows_anyone(self) -> bool:
        """Unauthenticated calls are allowed: asked for, and no token configured. A token file
        configured but empty or gone (its Secret deleted) keeps calls refused: the server
        does not open because a Secret went away."""
        return self.allow_unauthenticated and not self._token_configured and not self._files

    def verdict(self, header: bytes | None) -> Verdict:
        if self.allows_anyone:
            return Verdict.ALLOWED
        return check_authorization(header, self.accepted())

    @property
    def ready(self) -> bool:
        """False while every hook call would be refused for want of a configured token."""
        return self.allows_anyone or bool(self.accepted())

    def not_ready_reason(self) -> str:
        missing = [str(file.path) for file in self._files]
        if missing:
            return f"no hook credential in {', '.join(missing)}; " + HOW_TO_CONFIGURE
        return "no hook credential configured; " + HOW_TO_CONFIGURE


def is_hook_path(path: str) -> bool:
    return path.startswith(HOOK_PATH_PREFIXES)


class HookAuthMiddleware:
    """Refuses hook calls whose credential is missing or wrong, before the body is read."""

    def __init__(self, app: ASGIApp, credentials: HookCredentials) -> None:
        self.app = app
        self.credentials = credentials

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_hook_path(scope["path"]):
            await self.app(scope, receive, send)
            return
        verdict = self.credentials.verdict(_authorization(scope))
        if verdict is Verdict.ALLOWED:
            await self.app(scope, receive, send)
            return
        HOOK_REFUSALS.labels(verdict.value).inc()
        client = scope.get("client")
        log.warning(
            "hook refused",
            extra={
                "path": scope["path"],
                "outcome": verdict.value,
                "status": verdict.status,
                "client": client[0] if client else "-",
            },
        )
        await _refuse(send, verdict)


def _authorization(scope: Scope) -> bytes | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            return bytes(value)
    return None


async def _refuse(send: Send, verdict: Verdict) -> None:
    body = orjson.dumps({"error": verdict.message})
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if verdict.status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="arc-hooks"'))
    await send({"type": "http.response.start", "status": verdict.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
