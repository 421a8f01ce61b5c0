"""Registration material in the Runner's Secret: what is there, and how to write it."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hooks.clock import format_time
from hooks.metacontroller import object_or_empty, observed_int, observed_time
from hooks.runner.secret import EXPIRES_AT_KEY, JIT_CONFIG_KEY, RUNNER_ID_KEY, TOKEN_KEY

REGISTRATION_MODE_ANNOTATION = "arc-hooks.dev/registration"
"""Per-resource opt-in (Runner, or RunnerSet): `jit` registers with a just-in-time config
instead of a token."""

DEFAULT_RUNNER_GROUP = "Default"

TOKEN_MIN_VALIDITY_FOR_NEW_POD = timedelta(minutes=10)
"""A new pod needs time to pull its image and register; an older token is replaced first.
Smaller than the token cache's 30-minute refresh margin, so a freshly cached token always
qualifies and the Secret never flaps."""


@dataclass(frozen=True)
class RegistrationMaterial:
    """The decoded content of a Runner's registration Secret."""

    token: str | None = None
    expires_at: datetime | None = None
    jit_config: str | None = None
    runner_id: int | None = None

    def __repr__(self) -> str:  # never print the token or the JIT config
        return (
            f"RegistrationMaterial(token={'set' if self.token else None}, "
            f"expires_at={self.expires_at}, jit_config={'set' if self.jit_config else None}, "
            f"runner_id={self.runner_id})"
        )

    @property
    def can_register(self) -> bool:
        """Holds what a runner that has not started yet registers with."""
        return bool(self.token or self.jit_config)

    def spent(self) -> RegistrationMaterial:
        """What is kept once the runner has started with it: its id, not its credential."""
        return RegistrationMaterial(runner_id=self.runner_id)

    def token_usable(self, now: datetime) -> bool:
        return bool(
            self.token
            and self.expires_at is not None
            and self.expires_at - now >= TOKEN_MIN_VALIDITY_FOR_NEW_POD
        )


def registration_mode(annotations: Mapping[str, str], default_mode: str) -> str:
    """`token` or `jit`: the resource's annotation, else the server's setting."""
    mode = annotations.get(REGISTRATION_MODE_ANNOTATION, "").strip().lower()
    return mode if mode in ("token", "jit") else default_mode


IMPLICIT_JIT_LABELS = ("self-hosted", "Linux")
"""Labels `config.sh` gives a runner it registers, which a JIT config must name itself (GitHub
keeps exactly the labels a JIT config asks for): `runs-on: [self-hosted, linux]` must find it."""

ARCHITECTURE_LABELS = {"amd64": "X64", "arm64": "ARM64", "arm": "ARM"}
"""The runner's architecture label, by the node architecture a pod's nodeSelector pins."""


def jit_labels(labels: Sequence[str], node_selector: Mapping[str, str]) -> list[str]:
    """The labels of a JIT config: the implicit ones `config.sh` would add (the architecture
    only when the pod is pinned to one), then the spec's, without duplicates."""
    implicit = list(IMPLICIT_JIT_LABELS)
    architecture = ARCHITECTURE_LABELS.get(node_selector.get("kubernetes.io/arch", ""))
    if architecture:
        implicit.append(architecture)
    seen: set[str] = set()
    result: list[str] = []
    for label in [*implicit, *labels]:
        if label.casefold() not in seen:
            seen.add(label.casefold())
            result.append(label)
    return result


def read_material(secret: dict[str, Any] | None) -> RegistrationMaterial:
    if secret is None:
        return RegistrationMaterial()
    data = {key: _decode(value) for key, value in object_or_empty(secret.get("data")).items()}
    expires = data.get(EXPIRES_AT_KEY)
    runner_id = data.get(RUNNER_ID_KEY)
    return RegistrationMaterial(
        token=data.get(TOKEN_KEY) or None,
        expires_at=observed_time(expires),
        jit_config=data.get(JIT_CONFIG_KEY) or None,
        runner_id=observed_int(runner_id),
    )


def secret_data(material: RegistrationMaterial) -> dict[str, str]:
    """The Secret's `data` (base64), written as `data` so the API server stores it verbatim
    and Metacontroller's 3-way merge sees no difference on the next sync."""
    plain: dict[str, str] = {}
    if material.token:
        plain[TOKEN_KEY] = material.token
    if material.expires_at is not None:
        plain[EXPIRES_AT_KEY] = format_time(material.expires_at)
    if material.jit_config:
        plain[JIT_CONFIG_KEY] = material.jit_config
    if material.runner_id is not None:
        plain[RUNNER_ID_KEY] = str(material.runner_id)
    return {key: base64.b64encode(value.encode()).decode() for key, value in plain.items()}


def secret_fields(material: RegistrationMaterial) -> dict[str, dict[str, str]]:
    """A registration Secret's `data`, left out when empty: the API server stores an empty
    map as none (`omitempty`), and Metacontroller, comparing what it would write with what it
    reads, would otherwise write the Secret again at every sync."""
    data = secret_data(material)
    return {"data": data} if data else {}


def _decode(value: object) -> str:
    if not isinstance(value, str):
        return ""
    try:
        return base64.b64decode(value, validate=True).decode()
    except ValueError:  # not base64 (binascii.Error), not ASCII, or not UTF-8 inside
        return ""
