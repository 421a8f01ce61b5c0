"""The HorizontalRunnerAutoscalers a `workflow_job` may scale, and how ARC finds the one it does.

A `ScaleTarget` is an HRA joined with the runners it sizes (its RunnerDeployment's or
RunnerSet's registration scope, group and labels). ARC indexes targets by key:

| runners                     | key                          |
|-----------------------------|------------------------------|
| repository                  | `owner/repo`                 |
| organization, default group | `org`                        |
| organization, custom group  | `org/group/<group>`          |
| enterprise, default group   | `enterprises/<e>`            |
| enterprise, custom group    | `enterprises/<e>/group/<g>`  |

Keys compare case-insensitively, as GitHub compares owner, repository and group names.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from hooks.redaction import mask_credentials
from hooks.resources.autoscaler import HorizontalRunnerAutoscaler, HorizontalRunnerAutoscalerSpec
from hooks.resources.replicaset import RunnerDeployment
from hooks.resources.runner import RunnerConfig
from hooks.webhook.duration import parse_go_duration

RUNNER_DEPLOYMENT = "RunnerDeployment"
RUNNER_SET = "RunnerSet"
SELF_HOSTED = "self-hosted"
DEFAULT_RESERVATION_DURATION = timedelta(minutes=10)
LABELS_NAMED = 5
"""A note names this many of the labels an HRA's runners lack: a job may list thousands, and
each HRA considered gets a note in the answer and the log line."""
LABEL_SHOWN = 100
"""Characters of a label a note shows."""


class GroupScope(enum.IntEnum):
    """Where a runner group is defined. The order is ARC's precedence: organization first."""

    ORGANIZATION = 0
    ENTERPRISE = 1


@dataclass(frozen=True)
class RunnerGroup:
    """A runner group as the webhook sees it; the empty name is the scope's default group."""

    scope: GroupScope
    name: str = ""

    @property
    def is_default(self) -> bool:
        return not self.name

    @property
    def precedence(self) -> tuple[int, int]:
        """ARC's traversal order: default groups before custom ones, organization before
        enterprise within each."""
        return (0 if self.is_default else 1, int(self.scope))

    def identity(self) -> tuple[GroupScope, str]:
        return self.scope, self.name.casefold()

    def key(self, organization: str, enterprise: str | None) -> str | None:
        """The target key of this group for an event from `organization` (in `enterprise`);
        None for an enterprise group when the event names no enterprise."""
        if self.scope is GroupScope.ORGANIZATION:
            return organization if self.is_default else f"{organization}/group/{self.name}"
        if not enterprise:
            return None
        base = f"enterprises/{enterprise}"
        return base if self.is_default else f"{base}/group/{self.name}"


RunnerGroupVisibility = Callable[[str, str], Iterable[RunnerGroup]]
"""`(organization, repository_name) -> groups`: the runner groups of the organization, its
enterprise's inherited ones included, that the repository (its bare name, as GitHub's
`visible_to_repository` parameter takes it) may use. ARC asks GitHub's
`GET /orgs/{org}/actions/runner-groups?visible_to_repository=`; `runner_group_from_github`
converts that answer's items."""


def runner_group_from_github(group: Mapping[str, Any]) -> RunnerGroup:
    """A `runner_groups` item of GitHub's REST API as a RunnerGroup, as ARC reads it: the
    `default` group has no name, an `inherited` group is the enterprise's."""
    scope = GroupScope.ENTERPRISE if group.get("inherited") else GroupScope.ORGANIZATION
    name = "" if group.get("default") else str(group.get("name") or "")
    return RunnerGroup(scope, name)


def in_precedence_order(groups: Iterable[RunnerGroup]) -> list[RunnerGroup]:
    """`groups` without duplicates, in ARC's traversal order (ties keep their given order)."""
    unique: dict[tuple[GroupScope, str], RunnerGroup] = {}
    for group in groups:
        unique.setdefault(group.identity(), group)
    return sorted(unique.values(), key=lambda group: group.precedence)


@dataclass(frozen=True)
class TargetRunners:
    """What the webhook needs of a RunnerDeployment or RunnerSet: where its runners register
    and the labels they carry (`spec.labels`; metadata labels are not runner labels)."""

    kind: str
    name: str
    enterprise: str = ""
    organization: str = ""
    repository: str = ""  # "owner/name"
    group: str = ""
    labels: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, kind: str, name: str, config: RunnerConfig) -> TargetRunners:
        return cls(
            kind=kind,
            name=name,
            enterprise=config.enterprise or "",
            organization=config.organization or "",
            repository=config.repository or "",
            group=config.group or "",
            labels=tuple(config.labels),
        )

    def keys(self) -> frozenset[str]:
        """The keys under which these runners take jobs, casefolded.

        A custom group replaces the scope's plain key. ARC does this for RunnerDeployments
        but gives a RunnerSet both keys, which lets a RunnerSet in a custom group take jobs
        meant for the default group; here both kinds follow the RunnerDeployment rule.
        """
        keys: list[str | None] = []
        if self.repository:
            keys.append(self.repository)
        if self.organization:
            keys.append(
                RunnerGroup(GroupScope.ORGANIZATION, self.group).key(self.organization, None)
            )
        if self.enterprise:
            keys.append(RunnerGroup(GroupScope.ENTERPRISE, self.group).key("", self.enterprise))
        return frozenset(key.casefold() for key in keys if key)

    def runner_group(self) -> RunnerGroup | None:
        """The group these runners register in; None for repository runners (and for a group
        without an organization or enterprise, which ARC ignores)."""
        if self.enterprise:
            return RunnerGroup(GroupScope.ENTERPRISE, self.group)
        if self.organization:
            return RunnerGroup(GroupScope.ORGANIZATION, self.group)
        return None

    def missing_labels(self, job_labels: Iterable[str], *, limit: int | None = None) -> list[str]:
        """The job's labels these runners lack (the first `limit` of them, when given),
        compared case-insensitively (ARC #2302). `self-hosted` is never missing: every runner
        here is self-hosted."""
        have = {label.casefold() for label in self.labels}
        missing = (
            label
            for label in job_labels
            if label.casefold() != SELF_HOSTED and label.casefold() not in have
        )
        return list(itertools.islice(missing, limit))


@dataclass(frozen=True)
class ScaleTarget:
    """A HorizontalRunnerAutoscaler joined with the runners it scales."""

    namespace: str
    name: str
    spec: HorizontalRunnerAutoscalerSpec
    runners: TargetRunners
    uid: str = ""
    deletion_timestamp: str | None = None

    @classmethod
    def join(cls, hra: HorizontalRunnerAutoscaler, runners: TargetRunners) -> ScaleTarget:
        return cls(
            namespace=hra.metadata.namespace,
            name=hra.metadata.name,
            spec=hra.spec,
            runners=runners,
            uid=hra.metadata.uid,
            deletion_timestamp=hra.metadata.deletion_timestamp,
        )

    @classmethod
    def from_objects(cls, hra: Mapping[str, Any], target: Mapping[str, Any]) -> ScaleTarget:
        """Join an HRA and its scale target as the API server serves them (JSON objects).

        Raises ValueError when `target` is not the object the HRA's `scaleTargetRef` names.
        """
        autoscaler = HorizontalRunnerAutoscaler.model_validate(hra)
        ref = autoscaler.spec.scale_target_ref
        ref_kind = (ref.kind if ref else None) or RUNNER_DEPLOYMENT
        ref_name = (ref.name if ref else None) or ""
        kind = target.get("kind")
        metadata = target.get("metadata") or {}
        name, namespace = metadata.get("name", ""), metadata.get("namespace", "")
        if (kind, name, namespace) != (ref_kind, ref_name, autoscaler.metadata.namespace):
            raise ValueError(
                f"HorizontalRunnerAutoscaler {autoscaler.metadata.namespace}/"
                f"{autoscaler.metadata.name} scales {ref_kind} {ref_name!r}, "
                f"not {kind} {namespace}/{name}"
            )
        if kind == RUNNER_DEPLOYMENT:
            config: RunnerConfig = RunnerDeployment.model_validate(target).spec.template.spec
        else:
            # A RunnerSet carries the runner configuration inline in its spec.
            config = RunnerConfig.model_validate(target.get("spec") or {})
        return cls.join(autoscaler, TargetRunners.from_config(ref_kind, ref_name, config))

    def with_labels(self, labels: Sequence[str]) -> ScaleTarget:
        """The same HRA, its runners carrying `labels` too."""
        runners = dataclasses.replace(self.runners, labels=(*self.runners.labels, *labels))
        return dataclasses.replace(self, runners=runners)

    @property
    def reference(self) -> str:
        return f"{self.namespace}/{self.name}"

    def unfit_reason(self, job_labels: Sequence[str]) -> str | None:
        """Why this HRA cannot take the job (None when it can), checked in ARC's order."""
        if self.deletion_timestamp:
            return "it is being deleted"
        triggers = self.spec.scale_up_triggers
        if len(triggers) != 1:
            return f"it has {len(triggers)} scaleUpTriggers; webhook scaling needs exactly one"
        event = triggers[0].github_event
        if event is None or event.workflow_job is None:
            return "its scaleUpTrigger has no githubEvent.workflowJob"
        missing = self.runners.missing_labels(job_labels, limit=LABELS_NAMED + 1)
        if missing:
            # Masked before cut: cut first, a token's tail would escape the mask.
            shown = (mask_credentials(label)[:LABEL_SHOWN] for label in missing[:LABELS_NAMED])
            named = ", ".join(shown)
            more = ", and more" if len(missing) > LABELS_NAMED else ""
            runners = f"{self.runners.kind} {self.runners.name!r}"
            return f"its {runners} lacks the job's labels {named}{more}"
        return None

    def reservation_duration(self) -> tuple[timedelta, str | None]:
        """How long a reservation for one job lasts: the trigger's `duration`, or ten minutes
        when it is absent, zero or negative (so a lost `completed` event cannot pin capacity
        forever). An unparsable duration also gets ten minutes, with a note saying so."""
        triggers = self.spec.scale_up_triggers
        duration_text = triggers[0].duration if triggers else None
        if not duration_text:
            return DEFAULT_RESERVATION_DURATION, None
        try:
            duration = parse_go_duration(duration_text)
        except ValueError as error:
            return DEFAULT_RESERVATION_DURATION, f"{self.reference}: {error}; using 10m"
        if duration <= timedelta(0):
            return DEFAULT_RESERVATION_DURATION, None
        return duration, None
