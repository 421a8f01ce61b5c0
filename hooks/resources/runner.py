"""The Runner resource (`actions.summerwind.dev/v1alpha1`), every field ARC's Runner accepts.

The Runner CRD in `metacontroller/` is generated from these models (`arc-hooks crds`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from hooks.resources.common import (
    Condition,
    DateTime,
    FreeFormObject,
    ObjectMeta,
    Quantity,
    ResourceModel,
)

GROUP = "actions.summerwind.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

SCOPE_PATTERN = r"^[^/]+$"
REPOSITORY_PATTERN = r"^[^/]+/[^/]+$"


class SecretReference(ResourceModel):
    name: str


class GitHubAPICredentialsFrom(ResourceModel):
    secret_ref: SecretReference | None = None


class WorkVolumeClaimTemplate(ResourceModel):
    storage_class_name: str | None = None
    access_modes: list[str] = []
    resources: FreeFormObject = {}


class RunnerConfig(ResourceModel):
    """Where and how the runner registers (ARC's RunnerConfig, inlined into the spec)."""

    # The patterns are enforced by the CRD; the hook reports violations as a condition instead
    # of failing to parse, so they live in the schema only.
    enterprise: str | None = Field(default=None, json_schema_extra={"pattern": SCOPE_PATTERN})
    organization: str | None = Field(default=None, json_schema_extra={"pattern": SCOPE_PATTERN})
    repository: str | None = Field(default=None, json_schema_extra={"pattern": REPOSITORY_PATTERN})
    labels: list[str] = []
    group: str | None = None
    ephemeral: bool | None = None
    image: str | None = None
    work_dir: str | None = None
    dockerd_within_runner_container: bool | None = None
    docker_enabled: bool | None = None
    docker_mtu: int | None = Field(default=None, alias="dockerMTU")
    docker_registry_mirror: str | None = None
    docker_var_run_volume_size_limit: Quantity | None = None
    volume_size_limit: Quantity | None = None
    volume_storage_medium: str | None = None
    container_mode: str | None = None
    github_api_credentials_from: GitHubAPICredentialsFrom | None = Field(
        default=None, alias="githubAPICredentialsFrom"
    )


class RunnerPodSpec(ResourceModel):
    """Pod settings (ARC's RunnerPodSpec, inlined into the spec)."""

    dockerd_container_resources: FreeFormObject | None = None
    docker_volume_mounts: list[FreeFormObject] = []
    docker_env: list[FreeFormObject] = []
    containers: list[FreeFormObject] = []
    image_pull_policy: str | None = None
    env: list[FreeFormObject] = []
    env_from: list[FreeFormObject] = []
    resources: FreeFormObject | None = None
    volume_mounts: list[FreeFormObject] = []
    volumes: list[FreeFormObject] = []
    enable_service_links: bool | None = None
    init_containers: list[FreeFormObject] = []
    node_selector: dict[str, str] = {}
    service_account_name: str | None = None
    automount_service_account_token: bool | None = None
    sidecar_containers: list[FreeFormObject] = []
    security_context: FreeFormObject | None = None
    image_pull_secrets: list[FreeFormObject] = []
    affinity: FreeFormObject | None = None
    tolerations: list[FreeFormObject] = []
    priority_class_name: str | None = None
    termination_grace_period_seconds: int | None = None
    ephemeral_containers: list[FreeFormObject] = []
    host_aliases: list[FreeFormObject] = []
    topology_spread_constraints: list[FreeFormObject] = []
    runtime_class_name: str | None = None
    dns_policy: str | None = None
    dns_config: FreeFormObject | None = None
    work_volume_claim_template: WorkVolumeClaimTemplate | None = None


class RunnerSpec(RunnerConfig, RunnerPodSpec):
    """RunnerConfig and RunnerPodSpec, written inline as ARC does."""


class RunnerStatusRegistration(ResourceModel):
    """The scope and labels the runner was registered with. Never the token."""

    enterprise: str | None = None
    organization: str | None = None
    repository: str | None = None
    labels: list[str] = []
    expires_at: DateTime | None = None


class WorkflowStatus(ResourceModel):
    """Filled by ARC's in-pod status hook when enabled; accepted and kept as-is."""

    name: str | None = None
    repository: str | None = None
    repository_owner: str | None = None
    run_number: str | None = None
    run_id: str | None = Field(default=None, alias="runID")
    job: str | None = None
    action: str | None = None


StopOutcome = Literal["Unregistered", "NotRegistered", "PodStopped", "Forbidden"]


class GracefulStopStatus(ResourceModel):
    """Progress of one graceful stop: the durable record that makes the stop a resumable tick."""

    reason: str
    started_at: DateTime
    pod_uid: str | None = None  # the pod this stop is about; a new pod ends the record
    runner_id: int | None = None  # the registration this stop is about
    last_attempt_at: DateTime | None = None
    waiting_for_completion: bool = False
    completed_at: DateTime | None = None
    outcome: StopOutcome | None = None
    message: str = ""


class RunnerStatus(ResourceModel):
    ready: bool | None = None
    phase: str | None = None
    reason: str | None = None
    message: str | None = None
    registration: RunnerStatusRegistration | None = None
    workflow: WorkflowStatus | None = None
    last_registration_check_time: DateTime | None = None
    # What GitHub says about this runner.
    runner_id: int | None = None
    jit_config_time: DateTime | None = Field(
        default=None,
        description=(
            "When the just-in-time config of runnerId was generated: a sync that does not see "
            "its Secret yet waits for it, for a while, instead of asking GitHub again."
        ),
    )
    online: bool | None = None
    busy: bool | None = None
    # Lifecycle.
    conditions: list[Condition] = []
    graceful_stop: GracefulStopStatus | None = None
    failures: int | None = None
    last_failure_time: DateTime | None = None
    observed_generation: int | None = None


class Runner(ResourceModel):
    api_version: str = API_VERSION
    kind: Literal["Runner"] = "Runner"
    metadata: ObjectMeta = ObjectMeta()
    spec: RunnerSpec = RunnerSpec()
    status: RunnerStatus | None = None
