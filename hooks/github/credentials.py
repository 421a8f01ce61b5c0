"""Per-resource GitHub credentials: ARC's `githubAPICredentialsFrom.secretRef`.

A Runner, RunnerSet or HorizontalRunnerAutoscaler (and, through their templates, a
RunnerReplicaSet or RunnerDeployment) may name a Secret in its own namespace holding the same
keys as the controller's settings. Metacontroller delivers that Secret to the hook as a related
object (each controller's customize hook asks for it), so any hook replica can serve the
resource and nothing is read from the cluster by the hook server itself.

Pure: a Secret as Metacontroller sends it in, credentials or a problem out. Neither ever carries
a credential in its text.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from jwt.algorithms import RSAAlgorithm
from jwt.exceptions import InvalidKeyError
from pydantic import SecretStr

from hooks.metacontroller import KubeObject, object_or_empty
from hooks.settings import WITHOUT_BASIC_AUTH

CREDENTIALS_CONDITION = "GitHubAPICredentials"
"""The status condition of a resource that names a credentials Secret."""

DEFAULT_CREDENTIALS = "default"
"""The label of the hook server's own credentials in metrics."""

TOKEN_KEY = "github_token"
APP_ID_KEY = "github_app_id"
INSTALLATION_ID_KEY = "github_app_installation_id"
PRIVATE_KEY_KEY = "github_app_private_key"
URL_KEYS = {
    "github_url": "github_url",
    "github_enterprise_url": "github_enterprise_url",
    "github_runner_url": "github_runner_github_url",
}
"""ARC's URL keys (`secretDataToGitHubClientConfig`), by the setting each one overrides."""


@dataclass(frozen=True)
class ApiCredentials:
    """Usable credentials from a Secret. `source` ("namespace/name") and `fingerprint` (a
    digest of the Secret's data: a changed Secret is a new client) are safe to show."""

    source: str
    fingerprint: str
    token: str | None = field(default=None, repr=False)
    app_id: str | None = None
    installation_id: int | None = None
    private_key: str | None = field(default=None, repr=False)
    urls: Mapping[str, str] = field(default_factory=dict)  # setting name -> URL

    def settings_overrides(self) -> dict[str, Any]:
        """The settings these credentials replace. The credential fields are always replaced
        (a Secret with a token must not inherit the server's App, nor the reverse, nor the
        server's basic auth, which goes first and which such a Secret cannot give, as in
        ARC); a URL the Secret leaves out stays the server's, as ARC falls back to its own."""
        return {
            "github_token": SecretStr(self.token) if self.token else None,
            "github_app_id": self.app_id,
            "github_app_installation_id": self.installation_id,
            "github_app_private_key": SecretStr(self.private_key) if self.private_key else None,
            **WITHOUT_BASIC_AUTH,
            **self.url_overrides(),
        }

    def url_overrides(self) -> dict[str, str | None]:
        """The URL settings these credentials replace: those the Secret names. One naming a
        GitHub Enterprise Server takes its API and runner URLs from it, as ARC's client does,
        never the server's (found by conformance tests: such runners registered at the
        server's `GITHUB_RUNNER_GITHUB_URL`, another host); one naming an API URL alone is
        not on the server's GHES."""
        urls: dict[str, str | None] = dict(self.urls)
        if "github_enterprise_url" in urls:
            urls.setdefault("github_url", None)
            urls.setdefault("github_runner_github_url", None)
        elif "github_url" in urls:
            # Its own API, not the server's GitHub Enterprise Server: runners register at
            # github.com (or its `github_runner_url`), not at the server's GHES host (found in
            # review). ARC would let the server's enterprise URL outrank the Secret's.
            urls["github_enterprise_url"] = None
        return urls


@dataclass(frozen=True)
class CredentialsProblem:
    """Why a named Secret cannot be used; `message` names keys, never values."""

    source: str
    reason: str  # SecretNotFound | SecretInvalid
    message: str


Credentials = ApiCredentials | CredentialsProblem | None
"""What a resource asks for: its Secret's credentials, why they are unusable, or (None) the
hook server's own."""


def credentials_rule(namespace: str, secret_name: str) -> dict[str, Any]:
    """The customize hook's related-resource rule that brings the Secret to the sync."""
    return {
        "apiVersion": "v1",
        "resource": "secrets",
        "namespace": namespace,
        "names": [secret_name],
    }


def read_credentials(secret: KubeObject | None, namespace: str, secret_name: str) -> Credentials:
    """The credentials the Secret holds (ARC's keys), or what is wrong with it."""
    source = f"{namespace}/{secret_name}"
    if secret is None:
        return CredentialsProblem(
            source,
            "SecretNotFound",
            f"githubAPICredentialsFrom: Secret {secret_name!r} not found in namespace "
            f"{namespace!r}",
        )
    data = _decoded(secret)
    token = data.get(TOKEN_KEY) or None
    app_id = data.get(APP_ID_KEY) or None
    installation = data.get(INSTALLATION_ID_KEY) or None
    private_key = data.get(PRIVATE_KEY_KEY) or None
    problem = _problem(token, app_id, installation, private_key)
    if problem:
        return CredentialsProblem(
            source, "SecretInvalid", f"githubAPICredentialsFrom: Secret {secret_name!r} {problem}"
        )
    urls = {setting: data[key] for key, setting in URL_KEYS.items() if data.get(key)}
    return ApiCredentials(
        source=source,
        fingerprint=_fingerprint(data),
        token=token,
        app_id=None if token else app_id,
        installation_id=None if token or installation is None else int(installation),
        private_key=None if token else private_key,
        urls=urls,
    )


def _problem(
    token: str | None, app_id: str | None, installation: str | None, private_key: str | None
) -> str:
    if token:
        return ""  # a token wins over an App, as in ARC and the server's settings
    if not (app_id and installation and private_key):
        return (
            f"has no usable credentials: set {TOKEN_KEY}, or {APP_ID_KEY}, "
            f"{INSTALLATION_ID_KEY} and {PRIVATE_KEY_KEY}"
        )
    if not _ascii_number(app_id) and not app_id.startswith("Iv"):
        return f"{APP_ID_KEY} is neither an App id nor a client id"
    if not _ascii_number(installation):
        return f"{INSTALLATION_ID_KEY} is not a number"
    # Never a path: a path would read a file of the hook server's, not the user's key.
    if not private_key.lstrip().startswith("-----BEGIN"):
        return f"{PRIVATE_KEY_KEY} is not a PEM private key"
    if not app_key_signs(private_key):
        return f"{PRIVATE_KEY_KEY} {UNUSABLE_APP_KEY}"
    return ""


def _ascii_number(text: str) -> bool:
    """Digits 0-9 only: `str.isdigit` also takes "²" and other digits `int` refuses."""
    return text.isascii() and text.isdigit()


UNUSABLE_APP_KEY = "is not an unencrypted RSA private key in PEM form (GitHub Apps sign with RS256)"


def app_key_signs(pem: str) -> bool:
    """Whether PyGithub can sign a GitHub App's JWT with `pem`, read as PyJWT reads it for
    RS256. A key that cannot would fail every call, deep inside each (PyJWT's own error)."""
    try:
        key = RSAAlgorithm(RSAAlgorithm.SHA256).prepare_key(pem)
    except (InvalidKeyError, ValueError, TypeError):
        return False
    return isinstance(key, RSAPrivateKey)


def _decoded(secret: KubeObject) -> dict[str, str]:
    """`data` (base64) and `stringData` (which a real API server folds into `data`, and some
    clients still send), as text. A value that does not decode counts as absent."""
    values: dict[str, str] = {}
    for key, value in object_or_empty(secret.get("data")).items():
        if isinstance(key, str) and isinstance(value, str):
            try:
                values[key] = base64.b64decode(value, validate=True).decode().strip()
            except ValueError:
                continue
    for key, value in object_or_empty(secret.get("stringData")).items():
        if isinstance(key, str) and isinstance(value, str):
            values[key] = value.strip()
    return values


def _fingerprint(data: Mapping[str, str]) -> str:
    digest = hashlib.sha256()
    for key in sorted(data):
        digest.update(key.encode())
        digest.update(b"\0")
        digest.update(data[key].encode())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


# ------------------------------------------------------------------ what hooks ask and read


def spec_secret_name(resource: object) -> str | None:
    """`spec.githubAPICredentialsFrom.secretRef.name` of a resource as sent, if any."""
    spec = object_or_empty(object_or_empty(resource).get("spec"))
    ref = object_or_empty(object_or_empty(spec.get("githubAPICredentialsFrom")).get("secretRef"))
    name = ref.get("name")
    return name if isinstance(name, str) and name else None


def credentials_rules(namespace: str, secret_name: str | None) -> list[dict[str, Any]]:
    """The related-resource rules a customize hook adds for a resource's credentials."""
    if not secret_name or not namespace:
        return []
    return [credentials_rule(namespace, secret_name)]


class _RelatedObjects(Protocol):
    def object_named(self, kind: str, name: str, *, related: bool = False) -> KubeObject | None:
        """A related object of this kind and name."""
        ...


def requested_credentials(
    request: _RelatedObjects, namespace: str, secret_name: str | None
) -> Credentials:
    """The credentials a resource asks for, read from the Secret its hook request relates."""
    if not secret_name:
        return None
    secret = request.object_named("Secret", secret_name, related=True)
    return read_credentials(secret, namespace, secret_name)


def credentials_condition(credentials: Credentials) -> tuple[bool, str, str] | None:
    """(status, reason, message) of the GitHubAPICredentials condition; None without a Secret."""
    if credentials is None:
        return None
    if isinstance(credentials, CredentialsProblem):
        return False, credentials.reason, credentials.message
    return True, "SecretLoaded", f"GitHub calls use the credentials in Secret {credentials.source}"
