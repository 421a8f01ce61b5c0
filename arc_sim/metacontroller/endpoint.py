"""The credential a hook call carries, as Metacontroller resolves it (`pkg/hooks/
endpoint_config.go` and `auth.go`, v4.17).

A webhook's own `authorization` or `basicAuth` wins; otherwise the first `endpointConfigs` entry
whose host matches the webhook URL's host (case-insensitively, with or without the scheme's
default port) applies. The Secret is read once, when the controller starts: a Secret that is
missing or lacks the key keeps the controller from starting. TLS settings (`caBundle`,
`clientTLS`) are read but not modelled: the simulated transports do not speak TLS.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from arc_sim.store import ObjectStore

_DEFAULT_PORTS = {"https": "443", "http": "80"}


class UnresolvableCredential(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class CredentialRef:
    """Where a hook's Authorization header comes from."""

    kind: Literal["authorization", "basicAuth"]
    name: str
    namespace: str
    scheme: str = "Bearer"  # authorization only
    key: str = ""  # authorization only
    username_key: str = "username"  # basicAuth only
    password_key: str = "password"  # basicAuth only


def credential_ref(
    webhook: dict[str, Any], url: str, endpoint_configs: Sequence[dict[str, Any]]
) -> CredentialRef | None:
    """The hook's own credential, or that of the endpoint config matching its host."""
    if any(webhook.get(field) for field in ("authorization", "basicAuth", "caBundle", "clientTLS")):
        return _credential(webhook)
    config = match_endpoint_config(url, endpoint_configs)
    return _credential(config) if config is not None else None


def match_endpoint_config(
    url: str, endpoint_configs: Sequence[dict[str, Any]]
) -> dict[str, Any] | None:
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1].lower()
    hostname = (parts.hostname or "").lower()
    default_port = _DEFAULT_PORTS.get(parts.scheme, "")
    explicit_port = str(parts.port) if parts.port is not None else ""
    canonical = host if explicit_port else f"{hostname}:{default_port}"
    for config in endpoint_configs:
        wanted = str(config.get("host") or "").lower()
        if wanted in (host, canonical):
            return config
        if explicit_port and explicit_port == default_port and wanted == hostname:
            return config
    return None


def _credential(settings: dict[str, Any]) -> CredentialRef | None:
    authorization = settings.get("authorization")
    basic = settings.get("basicAuth")
    if authorization and basic:
        raise UnresolvableCredential("authorization and basicAuth are mutually exclusive")
    if authorization:
        ref = authorization["secretRef"]
        scheme = str(authorization.get("type") or "Bearer").strip()
        if scheme.lower() == "basic":
            raise UnresolvableCredential(
                f'authorization type "{scheme}" is not supported; use the basicAuth field instead'
            )
        return CredentialRef(
            "authorization", ref["name"], ref["namespace"], scheme=scheme, key=ref["key"]
        )
    if basic:
        ref = basic["secretRef"]
        return CredentialRef(
            "basicAuth",
            ref["name"],
            ref["namespace"],
            username_key=basic.get("usernameKey") or "username",
            password_key=basic.get("passwordKey") or "password",
        )
    return None


def resolve_header(ref: CredentialRef, store: ObjectStore) -> str:
    """The Authorization header value, read from the Secret now."""
    secret = store.get("Secret", ref.namespace, ref.name)
    if secret is None:
        raise UnresolvableCredential(f"can't get {ref.kind} secret {ref.namespace}/{ref.name}")
    data = secret.get("data") or {}
    if ref.kind == "authorization":
        return f"{ref.scheme} {_value(data, ref, ref.key).strip()}"
    username = _value(data, ref, ref.username_key)
    password = _value(data, ref, ref.password_key)
    if ":" in username:
        raise UnresolvableCredential("basicAuth username must not contain ':'")
    pair = f"{username.strip()}:{password.strip()}".encode()
    return "Basic " + base64.b64encode(pair).decode()


def _value(data: dict[str, Any], ref: CredentialRef, key: str) -> str:
    encoded = data.get(key)
    if not isinstance(encoded, str):
        raise UnresolvableCredential(
            f"{ref.kind} secret {ref.namespace}/{ref.name} does not contain key {key!r}"
        )
    return base64.b64decode(encoded).decode()
