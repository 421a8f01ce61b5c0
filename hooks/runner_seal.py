"""The seal the hooks put on what they built for a runner, so that a pod's word about its
runner (which organization, which runner name: its env, which whoever creates a pod writes)
is believed only when the hooks said so themselves.

A seal is an HMAC of the namespace, the pod's name, the scope and the runner name, under a key
derived from the server's own GitHub credentials (the token, or the App's private key as
loaded, never its path): every replica derives the same key, and no pod's creator knows it. A
seal copied elsewhere is worth nothing: another pod has another name, and a pod of the same
name can only be made by someone who could delete the original anyway.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json

from hooks.github.port import Scope
from hooks.settings import Settings

SEAL_ANNOTATION = "arc-hooks.dev/runner-seal"
ID_SEAL_ANNOTATION = "arc-hooks.dev/runner-id-seal"
"""The seal of the runner id the decorator records on a pod (`actions-runner/id`, ARC's): a
stop removes the runner by that id, so an id written on a pod by anyone else is not used."""


def seal_key(settings: Settings) -> bytes | None:
    """The key, or None without usable server credentials. From the credentials the server
    calls GitHub with, in the order it picks them."""
    if settings.basic_auth is not None:
        username, password = settings.basic_auth
        return _derived(f"{username}\0{password}")
    if settings.github_token is not None and settings.github_token.get_secret_value():
        return _derived(settings.github_token.get_secret_value())
    if settings.github_app_private_key is not None:
        return _app_key(settings.github_app_private_key.get_secret_value())
    return None


@functools.lru_cache(maxsize=4)
def _app_key(value: str) -> bytes | None:
    from hooks.github.pygithub_adapter import load_private_key

    try:
        return _derived(load_private_key(value).strip())  # the key itself, not its path
    except ValueError:
        return None


def _derived(secret: str) -> bytes:
    return hmac.new(secret.encode(), b"arc-hooks runner seal", hashlib.sha256).digest()


def runner_seal(key: bytes, namespace: str, pod_name: str, scope: Scope, runner_name: str) -> str:
    fields = (namespace, pod_name, scope.enterprise, scope.organization, scope.repository)
    return _sealed(key, _claim("pod", (*fields, runner_name)))


def _claim(kind: str, fields: tuple[str, ...], runner_id: int | None = None) -> str:
    """What a seal signs: one text for one claim, and none for two. A pod's seal whose fields
    hold no newline is signed as they are joined by newlines (the form pod seals have always
    had, so pods sealed before stay sealed). Anything else, a runner id's seal always, is
    signed as the JSON list of the kind and the fields, which no joined claim equals: JSON
    writes newlines escaped. Runner id seals used the joined form before, which a pod seal
    for a runner named "x\n101" could equal: those are no longer believed (the id is then
    looked up by name, and recorded anew)."""
    values = fields if runner_id is None else (*fields, str(runner_id))
    if runner_id is not None or any("\n" in value for value in fields):
        return json.dumps([kind, *values])
    return "\n".join(values)


def _sealed(key: bytes, claim: str) -> str:
    return hmac.new(key, claim.encode(), hashlib.sha256).hexdigest()[:32]


def seal_holds(
    recorded: object,
    key: bytes | None,
    namespace: str,
    pod_name: str,
    scope: Scope | None,
    runner_name: str,
) -> bool:
    if key is None or scope is None or not isinstance(recorded, str) or not recorded:
        return False
    expected = runner_seal(key, namespace, pod_name, scope, runner_name)
    return hmac.compare_digest(recorded, expected)


def runner_id_seal(
    key: bytes, namespace: str, pod_name: str, scope: Scope, runner_name: str, runner_id: int
) -> str:
    fields = (namespace, pod_name, scope.enterprise, scope.organization, scope.repository)
    return _sealed(key, _claim("runner-id", (*fields, runner_name), runner_id))


def runner_id_sealed(
    annotations: dict[str, object],
    key: bytes | None,
    namespace: str,
    pod_name: str,
    scope: Scope | None,
    runner_name: str,
    runner_id: int,
) -> bool:
    recorded = annotations.get(ID_SEAL_ANNOTATION)
    if key is None or scope is None or not isinstance(recorded, str) or not recorded:
        return False
    expected = runner_id_seal(key, namespace, pod_name, scope, runner_name, runner_id)
    return hmac.compare_digest(recorded, expected)
