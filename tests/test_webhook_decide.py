"""ARC's webhook rules: which deliveries scale which HorizontalRunnerAutoscaler, and by how much.

ARC's own webhook tests are ported in test_arc_webhook.py, over HTTP. These test the decision
itself: the reservation it names, completions, the lookup order, runner groups and their
visibility, label matching and trigger rules.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hooks.webhook import (
    NO_TARGET_MESSAGE,
    Action,
    Decision,
    GroupScope,
    RunnerGroup,
    ScaleTarget,
    WorkflowJobEvent,
    decide,
    find_scale_target,
    parse_event,
    reservation_name,
    runner_group_from_github,
)

Json = dict[str, Any]
NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
JOB_ID = 1234567890
WORKFLOW_JOB_TRIGGER: Json = {"githubEvent": {"workflowJob": {}}, "duration": "10m"}
# Kubernetes object names (DNS-1123 subdomains).
DNS_1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


# Objects as the API server serves them


def hra(
    name: str = "test-name",
    *,
    namespace: str = "default",
    target: str | None = None,
    kind: str | None = None,
    triggers: list[Json] | None = None,
    deleting: bool = False,
) -> Json:
    metadata: Json = {"name": name, "namespace": namespace, "uid": f"uid-{name}"}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T11:00:00Z"
    ref: Json = {"name": target or name}
    if kind:
        ref["kind"] = kind
    return {
        "apiVersion": "actions.summerwind.dev/v1alpha1",
        "kind": "HorizontalRunnerAutoscaler",
        "metadata": metadata,
        "spec": {
            "scaleTargetRef": ref,
            "minReplicas": 0,
            "maxReplicas": 10,
            "scaleUpTriggers": [WORKFLOW_JOB_TRIGGER] if triggers is None else triggers,
        },
    }


def runner_config(**config: Any) -> Json:
    return {key: value for key, value in config.items() if value is not None}


def runner_deployment(
    name: str = "test-name",
    *,
    namespace: str = "default",
    **config: Any,
) -> Json:
    return {
        "apiVersion": "actions.summerwind.dev/v1alpha1",
        "kind": "RunnerDeployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "template": {
                "metadata": {"labels": {}},
                "spec": runner_config(**config),
            }
        },
    }


def runner_set(name: str, *, namespace: str = "default", **config: Any) -> Json:
    return {
        "apiVersion": "actions.summerwind.dev/v1alpha1",
        "kind": "RunnerSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {**runner_config(**config), "selector": {"matchLabels": {"app": name}}},
    }


def deployment_target(
    name: str,
    *,
    namespace: str = "default",
    triggers: list[Json] | None = None,
    deleting: bool = False,
    **config: Any,
) -> ScaleTarget:
    """An HRA named `name` scaling the RunnerDeployment of the same name."""
    return ScaleTarget.from_objects(
        hra(name, namespace=namespace, triggers=triggers, deleting=deleting),
        runner_deployment(name, namespace=namespace, **config),
    )


# Deliveries


def workflow_job(
    action: str = "queued",
    labels: Iterable[str] = ("label1",),
    *,
    owner: str = "MY_ORG",
    repository: str = "MY_REPO",
    owner_type: str = "Organization",
    enterprise: str | None = None,
    conclusion: str | None = None,
    runner_id: int | None = None,
    job_id: int = JOB_ID,
) -> WorkflowJobEvent:
    """A `workflow_job` delivery like ARC's `org_webhook_workflow_job_payload.json`, parsed."""
    payload: Json = {
        "action": action,
        "workflow_job": {
            "id": job_id,
            "run_id": 987654321,
            "name": "build",
            "status": "completed" if action == "completed" else action,
            "labels": list(labels),
            "conclusion": conclusion,
            "runner_id": runner_id,
        },
        "repository": {
            "name": repository,
            "full_name": f"{owner}/{repository}",
            "owner": {"login": owner, "type": owner_type},
        },
        "sender": {"login": "octocat", "type": "User"},
    }
    if owner_type == "Organization":
        payload["organization"] = {"login": owner}
    if enterprise:
        payload["enterprise"] = {"slug": enterprise}
    event = parse_event("workflow_job", json.dumps(payload).encode())
    assert isinstance(event, WorkflowJobEvent)
    return event


def run(
    event: WorkflowJobEvent,
    *targets: ScaleTarget,
    visibility: Any = None,
) -> Decision:
    return decide(event, targets, now=NOW, runner_group_visibility=visibility)


def scaled(decision: Decision) -> str | None:
    """The `namespace/name` of the HRA a decision scales."""
    return decision.target.reference if decision.target else None


# Queued jobs


def test_a_queued_job_reserves_one_runner_for_the_triggers_duration() -> None:
    target = deployment_target("test-name", organization="MY_ORG", labels=["label1"])
    decision = run(workflow_job("queued", ("self-hosted", "label1")), target)
    assert decision == Decision(
        Action.CREATE_RESERVATION,
        "scaled test-name by 1",
        target=target,
        reservation_name=f"job-{JOB_ID}",
        effective_time=NOW,
        expiration_time=NOW + timedelta(minutes=10),
    )
    assert decision.amount == 1
    assert decision.target is not None and decision.target.uid == "uid-test-name"


# Completions


def test_a_completed_job_deletes_exactly_its_reservation() -> None:
    target = deployment_target("test-name", organization="MY_ORG", labels=["label1"])
    queued = run(workflow_job("queued"), target)
    completed = run(workflow_job("completed", conclusion="failure", runner_id=5), target)
    assert completed == Decision(
        Action.DELETE_RESERVATION,
        "scaled test-name by -1",
        target=target,
        reservation_name=queued.reservation_name,
    )
    assert completed.amount == -1


@pytest.mark.parametrize(
    ("conclusion", "runner_id", "action"),
    [
        ("success", 5, Action.DELETE_RESERVATION),
        ("failure", 5, Action.DELETE_RESERVATION),
        ("timed_out", 5, Action.DELETE_RESERVATION),
        # A job cancelled before it had a runner has a null runner_id; its capacity goes too.
        ("cancelled", None, Action.DELETE_RESERVATION),
        ("failure", None, Action.DELETE_RESERVATION),
        # Skipped jobs never reserved anything (ARC #836).
        ("skipped", None, Action.NONE),
        ("skipped", 5, Action.NONE),
        # A check run's completion: success without a runner (ARC #2118, #2119, #2520).
        ("success", None, Action.NONE),
    ],
)
def test_completions(conclusion: str, runner_id: int | None, action: Action) -> None:
    target = deployment_target("test-name", organization="MY_ORG", labels=["label1"])
    event = workflow_job("completed", conclusion=conclusion, runner_id=runner_id)
    assert run(event, target).action is action


def test_ignored_completions_say_why() -> None:
    target = deployment_target("test-name", organization="MY_ORG", labels=["label1"])
    skipped = run(workflow_job("completed", conclusion="skipped"), target)
    check_run = run(workflow_job("completed", conclusion="success"), target)
    assert skipped.message == "ignored the completion of a skipped job"
    assert check_run.message == "ignored a check run's completion: it had no runner"
    assert skipped.target is None and check_run.target is None


@pytest.mark.parametrize(
    ("conclusion", "runner_id"),
    [("skipped", None), ("success", None), ("failure", 5)],
    ids=["skipped", "check run", "ran"],
)
def test_a_completion_no_hra_serves_gets_arcs_answer(
    conclusion: str, runner_id: int | None
) -> None:
    # The HRA is looked up before the completion is judged, as ARC does.
    target = deployment_target("test-name", organization="MY_ORG", labels=["gpu"])
    event = workflow_job("completed", conclusion=conclusion, runner_id=runner_id)
    decision = run(event, target)
    assert (decision.action, decision.message) == (Action.NONE, NO_TARGET_MESSAGE)
    assert decision.notes == (
        "default/test-name: its RunnerDeployment 'test-name' lacks the job's labels label1",
    )


def test_an_in_progress_job_marks_its_reservation_with_arcs_answer() -> None:
    """ARC ignores it; here it tells the HRA that a runner took the job. Runner groups are not
    asked about: a wrong pick only finds no reservation."""
    visibility = Visibility(DEFAULT_GROUP)
    target = deployment_target("test-name", organization="MY_ORG", labels=["label1"])

    decision = run(workflow_job("in_progress", runner_id=5), target, visibility=visibility)

    assert decision == Decision(
        Action.MARK_JOB_STARTED,
        "ignored workflow_job action 'in_progress': it does not scale",
        target=target,
        reservation_name=reservation_name(JOB_ID),
        namespaces=("default",),
    )
    assert visibility.calls == []
    unserved = run(workflow_job("in_progress", labels=["gpu"]), target)
    assert unserved.action is Action.NONE and unserved.target is None


def test_an_in_progress_job_is_looked_for_wherever_an_hra_fits_its_labels() -> None:
    """Found in review: the first fit, in a runner group the repository cannot use, was in
    another namespace than the HRA `queued` reserved with, and the mark was lost."""
    hidden = deployment_target("alpha", namespace="a", organization="MY_ORG", labels=["label1"])
    visible = deployment_target("beta", namespace="b", organization="MY_ORG", labels=["label1"])
    other = deployment_target("gpu", namespace="c", organization="MY_ORG", labels=["gpu"])

    decision = run(workflow_job("in_progress"), hidden, visible, other)

    assert decision.namespaces == ("a", "b")


def test_an_in_progress_job_is_looked_for_where_common_labels_may_have_reserved_it() -> None:
    """Found in review: `queued` reserved through COMMON_RUNNER_LABELS in a namespace whose
    runners' own labels do not fit, and `in_progress` marked only where they did."""
    own = deployment_target("alpha", namespace="a", organization="MY_ORG", labels=["label1"])
    common = deployment_target("beta", namespace="b", organization="MY_ORG", labels=["gpu"])

    decision = decide(workflow_job("in_progress"), [own, common], now=NOW, common_labels=["label1"])

    assert decision.action is Action.MARK_JOB_STARTED
    assert decision.namespaces == ("a", "b")


@pytest.mark.parametrize("action", ["waiting", "requested", ""])
def test_other_actions_change_nothing(action: str) -> None:
    target = deployment_target("test-name", organization="MY_ORG", labels=["label1"])
    decision = run(workflow_job(action, runner_id=5), target)
    assert decision == Decision(
        Action.NONE, f"ignored workflow_job action {action!r}: it does not scale"
    )


def test_a_redelivered_queued_event_names_the_same_reservation() -> None:
    target = deployment_target("test-name", organization="MY_ORG", labels=["label1"])
    first = run(workflow_job("queued"), target)
    again = decide(workflow_job("queued"), [target], now=NOW + timedelta(seconds=30))
    assert first.reservation_name == again.reservation_name == f"job-{JOB_ID}"
    other_job = run(workflow_job("queued", job_id=JOB_ID + 1), target)
    assert other_job.reservation_name == f"job-{JOB_ID + 1}"


@pytest.mark.parametrize("job_id", [1, 42, 2**53, 10**19])
def test_reservation_names_are_valid_object_names(job_id: int) -> None:
    name = reservation_name(job_id)
    assert DNS_1123.fullmatch(name) and len(name) <= 63


# Lookup order: repository, then organization and enterprise runner groups


def test_repository_runners_come_first() -> None:
    organization = deployment_target("a-org", organization="MY_ORG", labels=["label1"])
    repository = deployment_target("z-repo", repository="MY_ORG/MY_REPO", labels=["label1"])
    assert scaled(run(workflow_job(), organization, repository)) == "default/z-repo"


def test_repository_runners_without_the_labels_fall_through_to_the_organization() -> None:
    repository = deployment_target("repo", repository="MY_ORG/MY_REPO", labels=["other"])
    organization = deployment_target("org", organization="MY_ORG", labels=["label1"])
    decision = run(workflow_job(), repository, organization)
    assert scaled(decision) == "default/org"
    assert decision.notes == (
        "default/repo: its RunnerDeployment 'repo' lacks the job's labels label1",
    )


def test_other_repositories_and_organizations_do_not_match() -> None:
    targets = (
        deployment_target("repo", repository="MY_ORG/OTHER_REPO", labels=["label1"]),
        deployment_target("org", organization="OTHER_ORG", labels=["label1"]),
        deployment_target("ent", enterprise="other-ent", labels=["label1"]),
    )
    assert run(workflow_job(enterprise="my-ent"), *targets).message == NO_TARGET_MESSAGE


def test_a_user_owner_has_only_repository_runners() -> None:
    organization = deployment_target("org", organization="octocat", labels=["label1"])
    repository = deployment_target("repo", repository="octocat/MY_REPO", labels=["label1"])
    user_job = workflow_job(owner="octocat", owner_type="User")
    assert scaled(run(user_job, organization, repository)) == "default/repo"
    decision = run(user_job, organization)
    assert decision.message == NO_TARGET_MESSAGE
    assert decision.notes == ("octocat is a user: only repository runners serve its jobs",)


def test_keys_compare_case_insensitively() -> None:
    organization = deployment_target("org", organization="my_org", labels=["label1"])
    repository = deployment_target("repo", repository="my_org/my_repo", labels=["label1"])
    assert scaled(run(workflow_job(), organization)) == "default/org"
    assert scaled(run(workflow_job(), organization, repository)) == "default/repo"


# Runner groups beyond ARC's tables (tests/test_arc_runner_groups.py): notes, visibility
# lookups, errors, names.

ORG_DEFAULT: Json = {"organization": "MY_ORG"}
ENTERPRISE_DEFAULT: Json = {"enterprise": "my-ent"}
ORG_CUSTOM: Json = {"organization": "MY_ORG", "group": "org-group"}
ENTERPRISE_CUSTOM: Json = {"enterprise": "my-ent", "group": "ent-group"}
PRECEDENCE = [ORG_DEFAULT, ENTERPRISE_DEFAULT, ORG_CUSTOM, ENTERPRISE_CUSTOM]
PRECEDENCE_NAMES = ["org-default", "enterprise-default", "org-custom", "enterprise-custom"]


def group_targets(order: Iterable[int]) -> list[ScaleTarget]:
    """One HRA per runner group of PRECEDENCE, all with the job's labels, named so that their
    names sort in `order` (names, not precedence, decide ties under one key)."""
    return [
        deployment_target(
            f"{rank}-{PRECEDENCE_NAMES[index]}", labels=["label1"], **PRECEDENCE[index]
        )
        for rank, index in enumerate(order)
    ]


def test_enterprise_runners_need_the_payloads_enterprise() -> None:
    enterprise = deployment_target("ent", enterprise="my-ent", labels=["label1"])
    assert scaled(run(workflow_job(enterprise="my-ent"), enterprise)) == "default/ent"
    assert scaled(run(workflow_job(enterprise="MY-ENT"), enterprise)) == "default/ent"
    assert run(workflow_job(), enterprise).message == NO_TARGET_MESSAGE
    assert run(workflow_job(enterprise="other"), enterprise).message == NO_TARGET_MESSAGE


def test_a_custom_group_does_not_take_default_group_jobs_and_vice_versa() -> None:
    custom = deployment_target("custom", organization="MY_ORG", group="gpu", labels=["label1"])
    # Only the group's own key: with every group visible the job reaches it through the group.
    assert scaled(run(workflow_job(), custom)) == "default/custom"
    # When the group is not visible to the repository, the default group's key does not lead
    # to it either.
    default_only = [RunnerGroup(GroupScope.ORGANIZATION)]
    assert run(workflow_job(), custom, visibility=lambda o, r: default_only).target is None


def test_runner_set_targets() -> None:
    repository = ScaleTarget.from_objects(
        hra("rs-repo", kind="RunnerSet"),
        runner_set("rs-repo", repository="MY_ORG/MY_REPO", labels=["label1"]),
    )
    custom = ScaleTarget.from_objects(
        hra("rs-custom", kind="RunnerSet"),
        runner_set("rs-custom", organization="MY_ORG", group="gpu", labels=["label1"]),
    )
    assert repository.runners.kind == "RunnerSet"
    assert scaled(run(workflow_job(), custom, repository)) == "default/rs-repo"
    # ARC also gives a RunnerSet in a custom group its organization's plain key; it does not
    # get it here, so a hidden custom group is not reached through the default group.
    default_only = [RunnerGroup(GroupScope.ORGANIZATION)]
    assert run(workflow_job(), custom, visibility=lambda o, r: default_only).target is None
    assert scaled(run(workflow_job(), custom)) == "default/rs-custom"


# Runner-group visibility


class Visibility:
    """GitHub's `GET /orgs/{org}/actions/runner-groups?visible_to_repository=`, recorded."""

    def __init__(self, *groups: Json) -> None:
        self.groups = groups
        self.calls: list[tuple[str, str]] = []

    def __call__(self, organization: str, repository: str) -> list[RunnerGroup]:
        self.calls.append((organization, repository))
        return [runner_group_from_github(group) for group in self.groups]


DEFAULT_GROUP: Json = {"id": 1, "name": "Default", "default": True, "inherited": False}


def test_invisible_groups_are_skipped() -> None:
    targets = group_targets(range(4))
    visibility = Visibility(
        {"id": 3, "name": "org-group", "default": False, "inherited": False},
        {"id": 4, "name": "ent-group", "default": False, "inherited": True},
    )
    decision = run(workflow_job(enterprise="my-ent"), *targets, visibility=visibility)
    assert scaled(decision) == "default/2-org-custom"
    assert visibility.calls == [("MY_ORG", "MY_REPO")]
    assert decision.notes == (
        "runner groups not visible to MY_ORG/MY_REPO: organization default group, "
        "enterprise default group",
    )


def test_inherited_enterprise_groups_are_the_enterprises() -> None:
    targets = group_targets(range(4))[1:]  # no organization default group
    visibility = Visibility(
        DEFAULT_GROUP,  # the organization's default group, which no HRA uses
        {"id": 2, "name": "Default", "default": True, "inherited": True},
    )
    decision = run(workflow_job(enterprise="my-ent"), *targets, visibility=visibility)
    assert scaled(decision) == "default/1-enterprise-default"


def test_visible_group_names_compare_case_insensitively() -> None:
    custom = deployment_target("custom", organization="MY_ORG", group="GPU", labels=["label1"])
    visibility = Visibility({"id": 5, "name": "gpu", "default": False})
    assert scaled(run(workflow_job(), custom, visibility=visibility)) == "default/custom"


def test_no_visible_group_means_no_hra() -> None:
    visibility = Visibility()
    decision = run(
        workflow_job(enterprise="my-ent"), *group_targets(range(4)), visibility=visibility
    )
    assert decision.message == NO_TARGET_MESSAGE


def test_visibility_is_asked_only_when_groups_could_match() -> None:
    visibility = Visibility(DEFAULT_GROUP)
    repository = deployment_target("repo", repository="MY_ORG/MY_REPO", labels=["label1"])
    organization = deployment_target("org", organization="MY_ORG", labels=["label1"])
    elsewhere = deployment_target("elsewhere", organization="OTHER_ORG", labels=["label1"])
    run(workflow_job(), repository, organization, visibility=visibility)  # repository matched
    run(workflow_job(owner_type="User"), organization, visibility=visibility)  # a user
    run(workflow_job(), elsewhere, visibility=visibility)  # no group of this organization
    run(workflow_job("in_progress"), organization, visibility=visibility)  # no scaling
    assert visibility.calls == []
    run(workflow_job(), organization, visibility=visibility)
    assert visibility.calls == [("MY_ORG", "MY_REPO")]


def test_visibility_is_not_asked_about_targets_that_cannot_take_the_job() -> None:
    """Found by a failure scenario: an organization webhook kept for the job metrics, its HRAs
    scaling by pull metrics only, asked GitHub for the runner groups at every delivery (4,598
    of 4,677 calls in 55 minutes, 93% of the token's budget)."""
    visibility = Visibility(DEFAULT_GROUP)
    pull_only = deployment_target("pull", organization="MY_ORG", labels=["label1"], triggers=[])
    other_labels = deployment_target("gpu", organization="MY_ORG", labels=["gpu"])
    deleting = deployment_target("old", organization="MY_ORG", labels=["label1"], deleting=True)

    for action in ("queued", "completed"):
        decision = run(
            workflow_job(action), pull_only, other_labels, deleting, visibility=visibility
        )
        assert decision.target is None

    assert visibility.calls == []


def test_visibility_errors_propagate() -> None:
    def failing(organization: str, repository: str) -> list[RunnerGroup]:
        raise ConnectionError("GitHub is unreachable")

    organization = deployment_target("org", organization="MY_ORG", labels=["label1"])
    with pytest.raises(ConnectionError):
        run(workflow_job(), organization, visibility=failing)


# Matching an HRA


def test_labels_compare_case_insensitively() -> None:
    target = deployment_target("test-name", organization="MY_ORG", labels=["LINUX", "Label1"])
    assert run(workflow_job(labels=["linux", "LABEL1"]), target).target == target
    assert run(workflow_job(labels=["Self-Hosted", "label1"]), target).target == target


def test_every_job_label_must_be_a_runner_label_but_not_vice_versa() -> None:
    target = deployment_target("test-name", organization="MY_ORG", labels=["linux", "gpu"])
    assert run(workflow_job(labels=["gpu"]), target).target == target
    assert run(workflow_job(labels=["self-hosted"]), target).target == target
    assert run(workflow_job(labels=["gpu", "x64"]), target).target is None


def test_a_job_without_labels_fits_the_first_target_under_its_key() -> None:
    # As ARC's webhook (getJobScaleTarget: the label loop has nothing to refuse). A job whose
    # `runs-on` names only a runner group comes without labels; its group picks the key.
    other_org = deployment_target("elsewhere", organization="OTHER_ORG")
    first = deployment_target("a-first", organization="MY_ORG", labels=["gpu"])
    second = deployment_target("b-second", organization="MY_ORG")
    decision = run(workflow_job(labels=[]), other_org, second, first)
    assert decision.target == first
    assert decision.message == "scaled a-first by 1"
    assert decision.notes[0] == "the job has no labels: any runner fits"
    assert run(workflow_job(labels=[]), other_org).target is None


@pytest.mark.parametrize(
    ("triggers", "reason"),
    [
        ([], "it has 0 scaleUpTriggers; webhook scaling needs exactly one"),
        (
            [WORKFLOW_JOB_TRIGGER, WORKFLOW_JOB_TRIGGER],
            "it has 2 scaleUpTriggers; webhook scaling needs exactly one",
        ),
        ([{"duration": "5m"}], "its scaleUpTrigger has no githubEvent.workflowJob"),
        (
            [{"githubEvent": {"checkRun": {"types": ["created"]}}}],
            "its scaleUpTrigger has no githubEvent.workflowJob",
        ),
    ],
    ids=["no trigger", "two triggers", "no githubEvent", "checkRun"],
)
def test_an_hra_needs_exactly_one_workflow_job_trigger(triggers: list[Json], reason: str) -> None:
    unfit = deployment_target("a", organization="MY_ORG", labels=["label1"], triggers=triggers)
    fit = deployment_target("b", organization="MY_ORG", labels=["label1"])
    decision = run(workflow_job(), unfit, fit)
    assert decision.target == fit
    assert decision.notes == (f"default/a: {reason}",)
    assert run(workflow_job(), unfit).message == NO_TARGET_MESSAGE


def test_an_hra_being_deleted_is_skipped() -> None:
    deleting = deployment_target("a", organization="MY_ORG", labels=["label1"], deleting=True)
    fit = deployment_target("b", organization="MY_ORG", labels=["label1"])
    decision = run(workflow_job(), deleting, fit)
    assert decision.target == fit
    assert decision.notes == ("default/a: it is being deleted",)


def test_the_first_fit_by_namespace_and_name_wins() -> None:
    targets = [
        deployment_target(name, namespace=namespace, organization="MY_ORG", labels=["label1"])
        for namespace, name in [("team-b", "a"), ("team-a", "z"), ("team-a", "b")]
    ]
    assert scaled(run(workflow_job(), *targets)) == "team-a/b"
    assert scaled(run(workflow_job(), *reversed(targets))) == "team-a/b"


@pytest.mark.parametrize(
    ("duration", "expected"),
    [
        ("30m", timedelta(minutes=30)),
        ("1h30m", timedelta(minutes=90)),
        ("10m0s", timedelta(minutes=10)),
        ("90s", timedelta(seconds=90)),
        (None, timedelta(minutes=10)),
        ("", timedelta(minutes=10)),
        ("0", timedelta(minutes=10)),
        ("0s", timedelta(minutes=10)),
        ("-5m", timedelta(minutes=10)),
    ],
)
def test_reservation_duration(duration: str | None, expected: timedelta) -> None:
    trigger: Json = {"githubEvent": {"workflowJob": {}}}
    if duration is not None:
        trigger["duration"] = duration
    target = deployment_target("t", organization="MY_ORG", labels=["label1"], triggers=[trigger])
    decision = run(workflow_job(), target)
    assert (decision.effective_time, decision.expiration_time) == (NOW, NOW + expected)
    assert decision.notes == ()


def test_an_unparsable_duration_gets_the_default_and_a_note() -> None:
    trigger: Json = {"githubEvent": {"workflowJob": {}}, "duration": "ten minutes"}
    target = deployment_target("t", organization="MY_ORG", labels=["label1"], triggers=[trigger])
    decision = run(workflow_job(), target)
    assert decision.action is Action.CREATE_RESERVATION
    assert decision.expiration_time == NOW + timedelta(minutes=10)
    assert decision.notes == ("default/t: invalid duration 'ten minutes'; using 10m",)


def test_find_scale_target_alone() -> None:
    target = deployment_target("test-name", organization="MY_ORG", labels=["label1"])
    lookup = find_scale_target(workflow_job("completed"), [target])
    assert lookup.target == target and lookup.notes == ()


# Joining an HRA with its scale target


def test_the_scale_target_must_be_the_one_the_hra_names() -> None:
    with pytest.raises(ValueError, match="scales RunnerDeployment 'test-name', not RunnerSet"):
        ScaleTarget.from_objects(hra("test-name"), runner_set("test-name"))
    with pytest.raises(ValueError, match="not RunnerDeployment default/other"):
        ScaleTarget.from_objects(hra("test-name"), runner_deployment("other"))
    with pytest.raises(ValueError, match="not RunnerDeployment elsewhere/test-name"):
        ScaleTarget.from_objects(hra("test-name"), runner_deployment(namespace="elsewhere"))


def test_a_joined_target_keeps_what_the_decision_needs() -> None:
    target = ScaleTarget.from_objects(
        hra("autoscaler", target="runners", deleting=True),
        runner_deployment(
            "runners", organization="MY_ORG", group="gpu", labels=["a", "b"], ephemeral=True
        ),
    )
    assert (target.namespace, target.name, target.uid) == (
        "default",
        "autoscaler",
        "uid-autoscaler",
    )
    assert target.deletion_timestamp == "2026-01-01T11:00:00Z"
    assert target.runners.kind == "RunnerDeployment" and target.runners.name == "runners"
    assert (target.runners.organization, target.runners.group) == ("MY_ORG", "gpu")
    assert target.runners.labels == ("a", "b")
    assert target.spec.max_replicas == 10
