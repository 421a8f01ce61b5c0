"""Ported from actions/actions-runner-controller (Apache-2.0)

ARC's tests of the runner groups visible to a repository, at revision 2ee6b3b8 of
simulator/runnergroups_test.go: `TestVisibleRunnerGroupsInsert` and `TestVisibleRunnerGroups`,
every step. (ARC's integration_test.go scenarios that scale a visible organization runner group
are ported with its other webhook tests, in test_arc_webhook.py.)

ARC keeps the visible groups in a `VisibleRunnerGroups` list; its webhook tries them in that
list's order (`Traverse`) after keeping those its HRAs use (`Includes`). Here no such object
exists, so each ARC call maps onto the code that plays its part:

- `NewRunnerGroupFromProperties(enterprise, organization, group)`: `TargetRunners.runner_group`
  of runners registered with those properties;
- `Add` then `Traverse`: `in_precedence_order` over the groups added, in the order added; and
  `find_scale_target` given those groups as the repository's visible ones, whose notes list the
  HRAs it tried, in order, when none fits the job;
- `Includes(group)`: whether `find_scale_target` reaches an HRA of that group alone.

ARC's `orgDefault`, `orgCustom`, `enterpriseDefault` and `enterpriseCustom` are ORG_DEFAULT,
ORG_CUSTOM, ENTERPRISE_DEFAULT and ENTERPRISE_CUSTOM.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from hooks.resources.autoscaler import HorizontalRunnerAutoscalerSpec
from hooks.webhook import (
    RunnerGroup,
    ScaleTarget,
    TargetRunners,
    WorkflowJobEvent,
    find_scale_target,
    in_precedence_order,
)
from hooks.webhook.targets import RUNNER_DEPLOYMENT

SPEC = HorizontalRunnerAutoscalerSpec.model_validate(
    {"scaleUpTriggers": [{"githubEvent": {"workflowJob": {}}, "duration": "10m"}]}
)
NAMESPACE = "default"


def runners_with_properties(enterprise: str, organization: str, group: str) -> TargetRunners:
    """Runners registered in `group` of `enterprise` or `organization`, named after both."""
    return TargetRunners(
        kind=RUNNER_DEPLOYMENT,
        name=f"{enterprise or organization}-{group or 'default'}",
        enterprise=enterprise,
        organization=organization,
        group=group,
        labels=("label1",),
    )


def new_runner_group_from_properties(enterprise: str, organization: str, group: str) -> RunnerGroup:
    runner_group = runners_with_properties(enterprise, organization, group).runner_group()
    assert runner_group is not None
    return runner_group


PROPERTIES = [
    ("", "myorg1", ""),
    ("", "myorg1", "myorg1group1"),
    ("myenterprise1", "", ""),
    ("myenterprise1", "", "myenterprise1group1"),
]
ORG_DEFAULT = new_runner_group_from_properties("", "myorg1", "")
ORG_CUSTOM = new_runner_group_from_properties("", "myorg1", "myorg1group1")
ENTERPRISE_DEFAULT = new_runner_group_from_properties("myenterprise1", "", "")
ENTERPRISE_CUSTOM = new_runner_group_from_properties("myenterprise1", "", "myenterprise1group1")

# One HRA per group: the HRA of ORG_DEFAULT's runners, and so on.
TARGETS = {
    new_runner_group_from_properties(*properties): ScaleTarget(
        namespace=NAMESPACE,
        name=runners.name,
        spec=SPEC,
        runners=runners,
    )
    for properties in PROPERTIES
    for runners in [runners_with_properties(*properties)]
}
GROUP_OF_HRA = {target.reference: group for group, target in TARGETS.items()}


def queued_job(*labels: str) -> WorkflowJobEvent:
    """A queued job of a repository of `myorg1`, an organization of `myenterprise1`."""
    return WorkflowJobEvent(
        action="queued",
        job_id=1,
        run_id=1,
        labels=labels,
        conclusion=None,
        runner_id=None,
        repository_name="myrepo1",
        owner_login="myorg1",
        owner_type="Organization",
        repository="myorg1/myrepo1",
        organization="myorg1",
        enterprise="myenterprise1",
    )


FITTING_JOB = queued_job("self-hosted", "label1")
# No HRA has this label, so the lookup tries every visible group and takes none.
UNFITTING_JOB = queued_job("self-hosted", "unmatched")


def includes(visible: Sequence[RunnerGroup], group: RunnerGroup) -> bool:
    """ARC's `v.Includes(group)`: a job reaches the HRA of `group` when GitHub shows the
    repository the `visible` groups."""
    lookup = find_scale_target(
        FITTING_JOB, [TARGETS[group]], runner_group_visibility=lambda org, repo: visible
    )
    return lookup.target is not None


# The one HRA that would take UNFITTING_JOB, in a group no test shows the repository: GitHub
# is asked about groups only when a target that could take the job is in one.
HIDDEN = ScaleTarget(
    namespace=NAMESPACE,
    name="hidden",
    spec=SPEC,
    runners=TargetRunners(
        kind=RUNNER_DEPLOYMENT,
        name="hidden",
        organization="myorg1",
        group="hidden-group",
        labels=("unmatched",),
    ),
)


def traverse_all(visible: Sequence[RunnerGroup]) -> list[RunnerGroup]:
    """ARC's `v.Traverse` with a callback that never stops it: the groups whose HRA the lookup
    tried, in order, read off its notes (`<namespace>/<name>: <why it does not fit>`)."""
    lookup = find_scale_target(
        UNFITTING_JOB,
        [*TARGETS.values(), HIDDEN],
        runner_group_visibility=lambda org, repo: visible,
    )
    assert lookup.target is None
    tried = [note.partition(": ")[0] for note in lookup.notes]
    return [GROUP_OF_HRA[reference] for reference in tried if reference in GROUP_OF_HRA]


def traverse_first(visible: Sequence[RunnerGroup]) -> list[RunnerGroup]:
    """ARC's `v.Traverse` with a callback that stops at the first group: the group whose HRA
    takes a job every HRA fits."""
    lookup = find_scale_target(
        FITTING_JOB, list(TARGETS.values()), runner_group_visibility=lambda org, repo: visible
    )
    return [] if lookup.target is None else [GROUP_OF_HRA[lookup.target.reference]]


@pytest.mark.parametrize(
    ("inserted", "want"),
    [
        # TestVisibleRunnerGroupsInsert: insert(orgCustom, 0), insert(orgDefault, 0),
        # insert(enterpriseDefault, 1). ARC places each group at the index given; the indices
        # are those of precedence order, which is all that is left here to check.
        pytest.param(
            [ORG_CUSTOM, ORG_DEFAULT, ENTERPRISE_DEFAULT],
            [ORG_DEFAULT, ENTERPRISE_DEFAULT, ORG_CUSTOM],
            id="TestVisibleRunnerGroupsInsert",
        ),
    ],
)
def test_visible_runner_groups_insert(inserted: list[RunnerGroup], want: list[RunnerGroup]) -> None:
    assert in_precedence_order(inserted) == want, "Unexpected result"
    assert traverse_all(inserted) == want, "Unexpected result"


@pytest.mark.parametrize(
    ("added", "included", "not_included"),
    [
        # TestVisibleRunnerGroups, requireGroups #1: before any Add.
        pytest.param(
            [],
            [],
            [ORG_DEFAULT, ENTERPRISE_DEFAULT, ORG_CUSTOM, ENTERPRISE_CUSTOM],
            id="TestVisibleRunnerGroups-1-none",
        ),
        # TestVisibleRunnerGroups, requireGroups #2: after Add(orgCustom).
        pytest.param(
            [ORG_CUSTOM],
            [ORG_CUSTOM],
            [ORG_DEFAULT, ENTERPRISE_DEFAULT, ENTERPRISE_CUSTOM],
            id="TestVisibleRunnerGroups-2-orgCustom",
        ),
        # TestVisibleRunnerGroups, requireGroups #3: after Add(orgDefault).
        pytest.param(
            [ORG_CUSTOM, ORG_DEFAULT],
            [ORG_DEFAULT, ORG_CUSTOM],
            [ENTERPRISE_DEFAULT, ENTERPRISE_CUSTOM],
            id="TestVisibleRunnerGroups-3-orgDefault",
        ),
        # TestVisibleRunnerGroups, requireGroups #4: after Add(enterpriseCustom).
        pytest.param(
            [ORG_CUSTOM, ORG_DEFAULT, ENTERPRISE_CUSTOM],
            [ORG_DEFAULT, ORG_CUSTOM, ENTERPRISE_CUSTOM],
            [ENTERPRISE_DEFAULT],
            id="TestVisibleRunnerGroups-4-enterpriseCustom",
        ),
        # TestVisibleRunnerGroups, requireGroups #5: after Add(enterpriseDefault).
        pytest.param(
            [ORG_CUSTOM, ORG_DEFAULT, ENTERPRISE_CUSTOM, ENTERPRISE_DEFAULT],
            [ORG_DEFAULT, ENTERPRISE_DEFAULT, ORG_CUSTOM, ENTERPRISE_CUSTOM],
            [],
            id="TestVisibleRunnerGroups-5-enterpriseDefault",
        ),
    ],
)
def test_visible_runner_groups(
    added: list[RunnerGroup], included: list[RunnerGroup], not_included: list[RunnerGroup]
) -> None:
    for group in included:
        assert includes(added, group), f"{group} must be included"
    for group in not_included:
        assert not includes(added, group), f"{group} must not be included"
    assert in_precedence_order(added) == included
    assert traverse_all(added) == included


@pytest.mark.parametrize(
    ("added", "first"),
    [
        # TestVisibleRunnerGroups, last step: Traverse stopping at the first group, after all
        # four Adds.
        pytest.param(
            [ORG_CUSTOM, ORG_DEFAULT, ENTERPRISE_CUSTOM, ENTERPRISE_DEFAULT],
            [ORG_DEFAULT],
            id="TestVisibleRunnerGroups-6-first",
        ),
    ],
)
def test_visible_runner_groups_traverse_stops_at_the_first(
    added: list[RunnerGroup], first: list[RunnerGroup]
) -> None:
    assert in_precedence_order(added)[:1] == first
    assert traverse_first(added) == first
