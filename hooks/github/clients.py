"""One GitHub port per set of credentials in use: the server's own, and one per credentials
Secret a resource names (`githubAPICredentialsFrom`).

Each port keeps its own caches and rate-limit backoff, so one organization's budget never
throttles another's, and a cached runner list is never answered to a caller with other
credentials. Ports are keyed by the Secret's fingerprint: a rotated Secret gets a fresh client,
and the old one ages out. Nothing here is needed for correctness: an evicted port is rebuilt on
the next call, only its caches are lost.
"""

from __future__ import annotations

from collections.abc import Callable

from hooks.github.credentials import ApiCredentials, Credentials, CredentialsProblem
from hooks.github.port import GitHubPort
from hooks.memo import Memo
from hooks.unconfigured import UnconfiguredGitHub

PORTS_PER_SERVER = 256
"""Credentials Secrets served at once before the least recently used one's caches are dropped."""

NOT_SUPPORTED = "githubAPICredentialsFrom: this hook server cannot use per-resource credentials"

PortBuilder = Callable[[ApiCredentials], GitHubPort]


class GitHubClients:
    def __init__(
        self,
        default: GitHubPort,
        build: PortBuilder | None = None,
        *,
        max_entries: int = PORTS_PER_SERVER,
    ) -> None:
        self.default = default
        self._build = build
        self._ports: Memo[tuple[str, str], GitHubPort] = Memo(max_entries)

    def port(self, credentials: Credentials) -> GitHubPort:
        """The port to call GitHub with for a resource asking for `credentials`."""
        if credentials is None:
            return self.default
        if isinstance(credentials, CredentialsProblem):
            return UnconfiguredGitHub(credentials.message)
        build = self._build
        if build is None:
            return UnconfiguredGitHub(NOT_SUPPORTED)
        key = (credentials.source, credentials.fingerprint)

        def built() -> GitHubPort:
            try:
                return build(credentials)
            except ValueError as error:  # e.g. a private key that does not load
                # The type only: a message about a key may quote part of it.
                return UnconfiguredGitHub(
                    f"githubAPICredentialsFrom: Secret {credentials.source!r} is unusable "
                    f"({type(error).__name__})"
                )

        return self._ports.get_or_compute(key, built)
