"""Configuration from the environment, with ARC's variable names where ARC has one."""

from __future__ import annotations

import base64
from typing import Annotated, Literal

from pydantic import AllowInfNan, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from hooks.metrics import DEFAULT_JOB_LABELS, JobMetricLabel

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

DEFAULT_RUNNER_IMAGE = "summerwind/actions-runner:latest"
DEFAULT_DOCKER_IMAGE = "docker:dind"
DEFAULT_JIT_RUNNER_IMAGE = "ghcr.io/actions/actions-runner:latest"
WITHOUT_BASIC_AUTH = {"github_basicauth_username": None, "github_basicauth_password": None}
"""The settings update that drops basic auth (a resource's own Secret, runner scale sets)."""
CREDENTIALS_HINT = (
    "set GITHUB_TOKEN, or GITHUB_APP_ID, GITHUB_APP_INSTALLATION_ID and GITHUB_APP_PRIVATE_KEY, "
    "or GITHUB_BASICAUTH_USERNAME and GITHUB_BASICAUTH_PASSWORD"
)
"""What a server without GitHub credentials is told to set."""


Seconds = Annotated[float, Field(ge=0), AllowInfNan(False)]
"""A duration in seconds: never negative, never infinite or NaN."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="", case_sensitive=True, extra="ignore")

    # GitHub credentials and endpoints (ARC's names).
    github_token: SecretStr | None = Field(default=None, alias="GITHUB_TOKEN")
    github_app_id: str | None = Field(default=None, alias="GITHUB_APP_ID")
    github_app_installation_id: int | None = Field(default=None, alias="GITHUB_APP_INSTALLATION_ID")
    github_app_private_key: SecretStr | None = Field(
        default=None,
        alias="GITHUB_APP_PRIVATE_KEY",
        description="A path to a PEM file, or the PEM itself.",
    )
    github_basicauth_username: str | None = Field(
        default=None,
        alias="GITHUB_BASICAUTH_USERNAME",
        description="With GITHUB_BASICAUTH_PASSWORD: HTTP basic auth instead of a token or App.",
    )
    github_basicauth_password: SecretStr | None = Field(
        default=None, alias="GITHUB_BASICAUTH_PASSWORD"
    )
    github_enterprise_url: str | None = Field(default=None, alias="GITHUB_ENTERPRISE_URL")
    github_url: str | None = Field(
        default=None, alias="GITHUB_URL", description="Overrides the REST API base URL."
    )
    github_runner_github_url: str | None = Field(
        default=None,
        alias="GITHUB_RUNNER_GITHUB_URL",
        description="Overrides the URL runners register against (GITHUB_URL in the pod).",
    )
    github_webhook_secret_token: SecretStr | None = Field(
        default=None, alias="GITHUB_WEBHOOK_SECRET_TOKEN"
    )

    # Runner pod defaults (ARC's controller flags).
    runner_image: str = Field(default=DEFAULT_RUNNER_IMAGE, alias="RUNNER_IMAGE")
    runner_jit_image: str | None = Field(
        default=None,
        min_length=1,
        alias="RUNNER_JIT_IMAGE",
        description=(
            "The runner image of a runner that registers with a JIT config (JIT registration, "
            "scale-set mode) when its spec names none. Unset: RUNNER_IMAGE, unless that is "
            f"ARC's summerwind image (which starts with a registration token only), then "
            f"{DEFAULT_JIT_RUNNER_IMAGE}."
        ),
    )
    docker_image: str = Field(default=DEFAULT_DOCKER_IMAGE, alias="DOCKER_IMAGE")
    docker_gid: str = Field(default="1001", alias="DOCKER_GID")
    docker_registry_mirror: str = Field(default="", alias="DOCKER_REGISTRY_MIRROR")
    runner_image_pull_secrets: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        alias="RUNNER_IMAGE_PULL_SECRETS",
        description="Comma-separated Secret names added to every runner pod.",
    )
    common_runner_labels: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        alias="COMMON_RUNNER_LABELS",
        description=(
            "Comma-separated labels added to the runners of every RunnerDeployment and RunnerSet."
        ),
    )
    runner_registration_mode: Literal["token", "jit"] = Field(
        default="token", alias="RUNNER_REGISTRATION_MODE"
    )

    # Lifecycle timing, in seconds (SYNC_PERIOD and DEFAULT_SCALE_DOWN_DELAY also as Go
    # durations, as ARC's flags take them).
    unregistration_retry_delay: Seconds = Field(default=60.0, alias="UNREGISTRATION_RETRY_DELAY")
    rate_limit_retry_delay: Seconds = Field(default=30.0, alias="RATE_LIMIT_RETRY_DELAY")
    token_error_retry_delay: Seconds = Field(default=180.0, alias="TOKEN_ERROR_RETRY_DELAY")
    registration_timeout: Seconds = Field(default=600.0, alias="REGISTRATION_TIMEOUT")
    registration_check_interval: Seconds = Field(default=60.0, alias="REGISTRATION_CHECK_INTERVAL")
    pod_failure_backoff: Seconds = Field(default=10.0, alias="RUNNER_POD_FAILURE_BACKOFF")
    pod_failure_backoff_max: Seconds = Field(default=300.0, alias="RUNNER_POD_FAILURE_BACKOFF_MAX")
    pod_max_failures: int = Field(default=5, alias="RUNNER_POD_MAX_FAILURES")
    sync_period: float = Field(
        default=60.0,
        alias="SYNC_PERIOD",
        gt=0,
        allow_inf_nan=False,
        description=(
            "ARC's --sync-period: how often an HRA re-reads its pull metrics, and how soon a "
            "Runner looks again when its scope's runner list could not be read."
        ),
    )
    default_scale_down_delay: Seconds = Field(
        default=600.0,
        alias="DEFAULT_SCALE_DOWN_DELAY",
        description="ARC's --default-scale-down-delay, for HRAs without their own.",
    )

    # The GitHub webhook receiver.
    webhook_allow_unsigned: bool = Field(
        default=False,
        alias="WEBHOOK_ALLOW_UNSIGNED",
        description="Accept deliveries without a signature check when no secret is set (unsafe).",
    )
    watch_namespace: str = Field(
        default="",
        alias="WATCH_NAMESPACE",
        description="ARC's --watch-namespace: only HRAs of this namespace scale on webhooks.",
    )
    webhook_targets_cache_ttl: float = Field(
        default=5.0,
        alias="WEBHOOK_TARGETS_CACHE_TTL",
        description="How long the receiver reuses its list of HRAs and their scale targets.",
    )
    webhook_runner_group_visibility: bool = Field(
        default=True,
        alias="WEBHOOK_RUNNER_GROUP_VISIBILITY",
        description=(
            "Ask GitHub which runner groups a repository may use before picking an "
            "organization or enterprise HRA, as ARC does when it has credentials (one "
            "cached API call per repository)."
        ),
    )
    job_metrics_labels: Annotated[list[JobMetricLabel], NoDecode] = Field(
        default_factory=lambda: list(DEFAULT_JOB_LABELS),
        alias="JOB_METRICS_LABELS",
        description=(
            "Comma-separated labels of ARC's job metrics that carry a value (runs_on, job_name, "
            "organization, repository, repository_full_name, owner, workflow_name, "
            "head_branch); the others are exported empty."
        ),
    )
    job_metrics_max_label_values: int = Field(
        default=100,
        ge=1,
        alias="JOB_METRICS_MAX_LABEL_VALUES",
        description=(
            "Distinct values each job-metric label takes per process; later new values are "
            "reported as `other`."
        ),
    )
    list_runners_cache_ttl: float = Field(default=90.0, alias="GITHUB_LIST_RUNNERS_CACHE_TTL")
    list_runners_budget_share: float = Field(
        default=0.5,
        gt=0.0,
        le=1.0,
        alias="GITHUB_LIST_RUNNERS_BUDGET_SHARE",
        description=(
            "Share of a token's API budget that runner lists may take, those of every scope it "
            "lists together: a scope's list is served longer than "
            "GITHUB_LIST_RUNNERS_CACHE_TTL when listing all of them that often would take more "
            "of the hourly limit, or of what is left of the current window."
        ),
    )
    shared_runner_lists_namespace: str = Field(
        default="",
        alias="SHARED_RUNNER_LISTS_NAMESPACE",
        description=(
            "Namespace of the ConfigMaps through which the replicas share each scope's runner "
            "list (the hooks' own; empty: each replica lists for itself)."
        ),
    )
    workflow_cache_ttl: float = Field(default=30.0, alias="GITHUB_WORKFLOW_CACHE_TTL")
    workflow_budget_share: float = Field(
        default=0.3,
        gt=0.0,
        le=1.0,
        alias="GITHUB_WORKFLOW_BUDGET_SHARE",
        description=(
            "Share of a token's API budget that the pull metrics' workflow run and job reads "
            "may take: each is reused longer than GITHUB_WORKFLOW_CACHE_TTL when reading all "
            "those asked for in the last three minutes that often would take more of the "
            "hourly limit, or of what is left of the current window."
        ),
    )
    runner_groups_cache_ttl: float = Field(default=60.0, alias="GITHUB_RUNNER_GROUPS_CACHE_TTL")
    github_request_timeout: float = Field(default=5.0, alias="GITHUB_REQUEST_TIMEOUT")

    hook_memo_runners: int = Field(
        default=4096,
        ge=1,
        alias="HOOK_MEMO_RUNNERS",
        description=(
            "Runners a hook replica keeps parsed, with their pods (about 20 KB each), and "
            "twice as many children of large sets, read and as decoded (about 10 KB each): at "
            "least the number of Runners it serves. "
            "Metacontroller syncs each Runner in turn, so a smaller memo spares nothing."
        ),
    )
    hook_max_request_bytes: int = Field(
        default=32 * 1024 * 1024,
        ge=1024 * 1024,
        alias="HOOK_MAX_REQUEST_BYTES",
        description=(
            "The largest hook request read (413 above it). Metacontroller sends every child "
            "in one request: about 2 KB a Runner of a RunnerReplicaSet, 11 KB a member of a "
            "RunnerSet (its StatefulSet, pod and Secret)."
        ),
    )

    # Who may call the hooks (Metacontroller), and how the server is reached.
    hook_bearer_token: SecretStr | None = Field(
        default=None,
        alias="HOOK_BEARER_TOKEN",
        description="The Bearer token Metacontroller sends on every hook call.",
    )
    hook_bearer_token_file: str | None = Field(
        default=None,
        alias="HOOK_BEARER_TOKEN_FILE",
        description="A file holding that token (a mounted Secret); read again when it changes.",
    )
    hook_bearer_token_previous_file: str | None = Field(
        default=None,
        alias="HOOK_BEARER_TOKEN_PREVIOUS_FILE",
        description="A file with a token still accepted while a rotation is under way.",
    )
    hooks_allow_unauthenticated: bool = Field(
        default=False,
        alias="HOOKS_ALLOW_UNAUTHENTICATED",
        description="Answer hooks without a credential when none is configured (unsafe).",
    )
    tls_cert_file: str | None = Field(default=None, alias="HOOK_TLS_CERT_FILE")
    tls_key_file: str | None = Field(default=None, alias="HOOK_TLS_KEY_FILE")
    tls_client_ca_file: str | None = Field(
        default=None,
        alias="HOOK_TLS_CLIENT_CA_FILE",
        description="With TLS on: require client certificates signed by this CA (mTLS).",
    )

    health_port: int | None = Field(
        default=None,
        alias="HOOK_HEALTH_PORT",
        description="Also serve /healthz, /readyz and /metrics over plain HTTP on this port.",
    )

    log_level: str = Field(default="INFO", alias="LOG_LEVEL")

    @field_validator("log_level")
    @classmethod
    def _known_log_level(cls, value: str) -> str:
        level = value.strip().upper()
        if level not in LOG_LEVELS:
            raise ValueError(f"must be one of {', '.join(LOG_LEVELS)}")
        return level

    @field_validator("sync_period", "default_scale_down_delay", mode="before")
    @classmethod
    def _seconds_or_go_duration(cls, value: object) -> object:
        """Seconds, or a Go duration as ARC's flags take it (`1m`, `10m30s`)."""
        if isinstance(value, str) and value.strip() and value.strip()[-1].isalpha():
            from hooks.webhook.duration import parse_go_duration

            return parse_go_duration(value.strip()).total_seconds()
        return value

    @field_validator(
        "runner_image_pull_secrets", "common_runner_labels", "job_metrics_labels", mode="before"
    )
    @classmethod
    def _split_csv(cls, value: object) -> object:
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        return value

    @property
    def basic_auth(self) -> tuple[str, str] | None:
        """The basic-auth username and password, when both are given: they go before a token
        and an App, as in ARC."""
        password = self.github_basicauth_password
        if not self.github_basicauth_username or not password or not password.get_secret_value():
            return None
        return self.github_basicauth_username, password.get_secret_value()

    @property
    def uses_basic_auth(self) -> bool:
        return self.basic_auth is not None

    @property
    def has_scale_set_credentials(self) -> bool:
        """A token or an App: what runner scale sets are reached with (not basic auth)."""
        app = self.github_app_id and self.github_app_installation_id and self.github_app_private_key
        return bool(self.github_token or app)

    @property
    def has_github_credentials(self) -> bool:
        return self.basic_auth is not None or self.has_scale_set_credentials

    @property
    def github_secrets(self) -> list[str]:
        """The server's GitHub credentials as text, to be masked wherever they could show:
        basic auth's password also as its `Authorization` header carries it."""
        secrets = [
            secret.get_secret_value()
            for secret in (
                self.github_token,
                self.github_app_private_key,
                self.github_basicauth_password,
            )
            if secret is not None and secret.get_secret_value()
        ]
        if self.basic_auth is not None:
            username, password = self.basic_auth
            secrets.append(base64.b64encode(f"{username}:{password}".encode()).decode())
        return secrets

    @property
    def api_base_url(self) -> str:
        """The REST API base, derived as ARC derives it (GHES: `<url>/api/v3`)."""
        if self.github_url:
            return self.github_url.rstrip("/")
        if self.github_enterprise_url:
            base = self.github_enterprise_url.rstrip("/")
            host = base.split("://", 1)[-1].split("/", 1)[0]
            # go-github's NewEnterpriseClient, as ARC's getEnterpriseApiUrl mirrors it: a host
            # `api.<...>` or `<...>.api.<...>` serves the API at its root.
            if host.startswith("api.") or ".api." in host or base.endswith("/api/v3"):
                return base
            return f"{base}/api/v3"
        return "https://api.github.com"

    @property
    def runner_github_url(self) -> str:
        """The URL runners register against: github.com, or the GHES host without /api/v3."""
        if self.github_runner_github_url:
            return self.github_runner_github_url.rstrip("/") + "/"
        if self.github_enterprise_url:
            base = self.github_enterprise_url.rstrip("/")
            base = base.removesuffix("/api/v3")
            return base + "/"
        return "https://github.com/"
