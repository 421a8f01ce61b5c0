"""Building blocks shared by the custom-resource models.

Kubernetes types embedded in our resources (containers, volumes, affinity, ...) stay free-form
objects: the API server validates them when the pods we build are created, and keeping them
free-form means every field Kubernetes accepts today or tomorrow passes through untouched.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, WithJsonSchema, model_validator
from pydantic.alias_generators import to_camel

QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

FreeFormObject = Annotated[
    dict[str, Any],
    WithJsonSchema({"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
]
"""An embedded Kubernetes object kept as-is (Container, Volume, Affinity, ...)."""

Quantity = Annotated[
    int | str,
    WithJsonSchema(
        {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            "x-kubernetes-int-or-string": True,
        }
    ),
]
"""A Kubernetes resource.Quantity such as `1M` or `10Gi`."""

DateTime = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]
"""An RFC 3339 timestamp kept as text, exactly as the API server serves it."""


class ResourceModel(BaseModel):
    """Base of every resource model: camelCase on the wire, unknown fields ignored.

    Unknown fields are ignored rather than rejected because the API server prunes them against
    the CRD schema before we ever see them; being lenient here keeps a newer CRD and an older
    hook server compatible during an upgrade.

    Values are read strictly, as the CRD schema types them: `replicas: "3"`, `replicas: true`
    and `ephemeral: "false"` are invalid specs, not three runners, one runner and false. The
    API server refuses them already; an object that reaches a hook without that check (a CRD
    installed without its schema, a request sent by hand) gets the same answer, not a guess.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        strict=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON form, camelCase, without unset optional fields."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")

    def to_manifest(self) -> dict[str, Any]:
        """The JSON form with only what was given: a template copied into a child stays as the
        user wrote it, without the model's empty defaults."""
        return self.model_dump(by_alias=True, exclude_unset=True, exclude_none=True, mode="json")


class CreatedRunner(ResourceModel):
    """A runner a set asked for and had not seen among its children when it last answered."""

    name: str
    requested_at: DateTime
    slot: int | None = None  # the volume slot it mounts (RunnerSet with volume claim templates)


class ObjectMeta(ResourceModel):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    generation: int = 0
    resource_version: str = ""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_references: list[FreeFormObject] = []
    finalizers: list[str] = []
    deletion_timestamp: str | None = None
    creation_timestamp: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        """A field given as `null` is one not given, as Kubernetes reads ObjectMeta (an empty
        `annotations: null` is no reason to call the whole object unreadable)."""
        if isinstance(data, dict) and None in data.values():
            return {key: value for key, value in data.items() if value is not None}
        return data

    def controller_owner_kind(self) -> str | None:
        for ref in self.owner_references:
            if ref.get("controller"):
                kind = ref.get("kind")
                return kind if isinstance(kind, str) else None
        return None


class Condition(ResourceModel):
    """A status condition, Kubernetes style. `lastTransitionTime` changes on transitions only."""

    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str = ""
    message: str = ""
    last_transition_time: DateTime | None = None


class AutoscaledSize(ResourceModel):
    """The size an autoscaler last gave a RunnerDeployment or RunnerSet, and the set's own
    `spec.replicas` then (`hooks.scale_target.target_size`)."""

    autoscaler: str
    replicas: int
    spec_replicas: int | None = None
    gone_since: DateTime | None = None  # when the set first found no answer from it


class ScaleSetStatus(ResourceModel):
    """The runner scale set a RunnerDeployment or RunnerSet keeps (scale-set mode)."""

    id: int
    name: str
    runner_group: str | None = None
