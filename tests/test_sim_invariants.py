"""What a simulated run reports about the objects the scenario applied and the jobs it
submitted: a refused apply is a failed apply (and fails the run); a job no runner set of the
scenario could ever take is unservable (reported apart); every other job must complete."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from arc_sim.fake_github import FakeGitHub
from arc_sim.scenario import Scenario
from arc_sim.summary import RunnerTarget, Summary, runner_target
from arc_sim.world import World
from hooks.clock import ManualClock
from hooks.github.port import Scope

ARC = "actions.summerwind.dev/v1alpha1"


def scenario(**fields: Any) -> Scenario:
    document: dict[str, Any] = {"name": "invariants", "duration": "10m", "quietPeriod": "10m"}
    document.update(fields)
    return Scenario.model_validate(document)


def runner(name: str = "r1", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": ARC,
        "kind": "Runner",
        "metadata": {"name": name},
        "spec": {"organization": "acme", "labels": ["linux"], **spec},
    }


def deployment(name: str = "d1", **template: Any) -> dict[str, Any]:
    return {
        "apiVersion": ARC,
        "kind": "RunnerDeployment",
        "metadata": {"name": name},
        "spec": {"replicas": 1, "template": {"spec": template}},
    }


def autoscaler_of_d1(name: str, **spec: Any) -> dict[str, Any]:
    """An HRA of the RunnerDeployment `d1` with `spec`'s other fields."""
    return {
        "apiVersion": ARC,
        "kind": "HorizontalRunnerAutoscaler",
        "metadata": {"name": name},
        "spec": {"scaleTargetRef": {"kind": "RunnerDeployment", "name": "d1"}, **spec},
    }


def jobs(repository: str, labels: list[str], count: int = 1, start: str = "1m") -> dict[str, Any]:
    return {
        "repository": repository,
        "labels": labels,
        "count": count,
        "start": start,
        "every": "10s",
        "duration": "1m",
    }


def run(**fields: Any) -> Summary:
    return World(scenario(**fields)).run()


# ------------------------------------------------------------------ failed applies


def test_an_object_the_api_server_refuses_is_a_failed_apply_and_fails_the_run() -> None:
    autoscaler = autoscaler_of_d1("auto", maxReplicas="forty")

    summary = run(objects=[runner(), autoscaler], jobs=[jobs("acme/app", ["self-hosted", "linux"])])

    assert summary.api.applied == 1
    assert summary.api.failed_applies == 1
    assert summary.api.failures == [
        "objects[1] HorizontalRunnerAutoscaler default/auto: HorizontalRunnerAutoscaler"
        '.actions.summerwind.dev "auto" is invalid: spec.maxReplicas: Invalid value: "string": '
        'spec.maxReplicas in body must be of type integer: "string"'
    ]
    assert summary.api.refused_writes >= 1
    assert summary.invariants.no_failed_applies is False
    assert summary.invariants.failed() == ["noFailedApplies"]
    assert not summary.invariants.hold()
    assert "failed apply" in summary.table()
    assert summary.jobs.completed == 1  # the rest of the world ran on


def test_a_refused_timeline_apply_is_a_failed_apply_too() -> None:
    changed = runner(labels="linux")

    summary = run(objects=[runner()], timeline=[{"at": "2m", "apply": changed}])

    assert summary.api.applied == 1
    assert [f.split(":")[0] for f in summary.api.failures] == [
        "timeline apply at 120s Runner default/r1"
    ]
    assert summary.invariants.no_failed_applies is False


def test_an_unknown_field_in_a_scenario_object_is_refused_as_kubectl_would() -> None:
    summary = run(objects=[runner(organisation="acme")])

    assert summary.api.failed_applies == 1
    assert 'strict decoding error: unknown field "spec.organisation"' in summary.api.failures[0]


def test_a_kind_no_crd_defines_is_a_failed_apply() -> None:
    summary = run(objects=[{**runner(), "kind": "Runer"}])

    assert summary.api.failures == [
        'objects[0] Runer default/r1: no matches for kind "Runer" in version '
        '"actions.summerwind.dev/v1alpha1"'
    ]


def test_simulate_exits_non_zero_and_names_the_failed_apply(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(
        json.dumps(
            {
                "name": "broken",
                "duration": "2m",
                "objects": [runner(ephemeral="yes")],
            }
        )
    )

    result = subprocess.run(
        [sys.executable, "-m", "hooks", "simulate", str(path), "--json", "--progress-every", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert result.returncode == 1, result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["api"]["failedApplies"] == 1
    assert summary["invariants"]["noFailedApplies"] is False
    assert "noFailedApplies" in result.stderr


# ------------------------------------------------------------------ servable jobs


def test_jobs_no_runner_set_could_take_are_unservable_not_failures() -> None:
    summary = run(
        objects=[runner()],
        jobs=[
            jobs("acme/app", ["self-hosted", "linux"], count=2),
            jobs("acme/app", ["self-hosted", "windows"]),  # no runner has the label
            jobs("other/app", ["self-hosted", "linux"]),  # no runner of that organization
        ],
    )

    assert summary.jobs.completed == 2
    assert summary.jobs.unservable == 2
    assert summary.jobs.waiting == 2
    assert summary.invariants.servable_jobs_completed
    assert summary.invariants.hold(), summary.table()


def test_a_servable_job_that_never_ran_fails_the_invariant() -> None:
    summary = run(
        cluster={"nodes": 0},  # the runner pod is never scheduled
        objects=[deployment(repository="acme/app", labels=["linux"])],
        jobs=[jobs("acme/app", ["linux"])],
    )

    assert summary.jobs.unservable == 0
    assert summary.jobs.waiting == 1
    assert summary.invariants.servable_jobs_completed is False
    assert "servableJobsCompleted" in summary.invariants.failed()


def test_the_summary_says_what_the_scenarios_objects_reported_wrong() -> None:
    """Found by a newcomer: an HRA with minReplicas above maxReplicas failed a run with
    `servableJobsCompleted` alone; the InvalidSpec condition that said why was gone with the
    teardown."""
    autoscaler = autoscaler_of_d1("h1", minReplicas=6, maxReplicas=5)
    summary = run(
        objects=[deployment(organization="acme", labels=["linux"]), autoscaler],
        jobs=[jobs("acme/app", ["linux"])],
    )

    (problem,) = summary.problems
    assert problem.startswith("HorizontalRunnerAutoscaler default/h1: ScalingActive=False ")
    assert "maxReplicas" in problem
    assert [
        line.split(None, 1)[1]
        for line in summary.table().splitlines()
        if line.startswith("condition ")
    ] == [problem]
    assert summary.to_json()["problems"] == [problem]


def test_a_clean_run_reports_no_problem() -> None:
    summary = run(objects=[runner()], jobs=[jobs("acme/app", ["linux"])])

    assert summary.problems == []
    assert "condition" not in summary.table()


def test_runner_sets_applied_on_the_timeline_count_and_enterprises_cover_their_organizations() -> (
    None
):
    summary = run(
        organizations={"acme": "acme-corp"},
        objects=[runner()],
        timeline=[{"at": "30s", "apply": deployment(enterprise="acme-corp", labels=["gpu"])}],
        jobs=[jobs("acme/app", ["gpu"], start="2m"), jobs("beta/app", ["gpu"], start="2m")],
    )

    assert summary.jobs.unservable == 1  # beta is not one of acme-corp's organizations
    assert summary.jobs.completed == 1
    assert summary.invariants.servable_jobs_completed


# ------------------------------------------------------------------ the rule, against GitHub's


def test_runner_targets_read_each_kind_where_it_keeps_its_runners_config() -> None:
    runner_set = {
        "apiVersion": ARC,
        "kind": "RunnerSet",
        "metadata": {"name": "s"},
        "spec": {"repository": "acme/app", "labels": ["big"]},
    }

    assert runner_target(runner()) == RunnerTarget(Scope(organization="acme"), ("linux",))
    assert runner_target(deployment(enterprise="e")) == RunnerTarget(Scope(enterprise="e"), ())
    assert runner_target(runner_set) == RunnerTarget(Scope(repository="acme/app"), ("big",))
    assert runner_target({"apiVersion": "v1", "kind": "Runner", "metadata": {}}) is None
    assert runner_target(runner(organization=None)) is None
    # A scale set's members answer to its name alone, its one label on GitHub.
    scale_set = {**runner_set, "metadata": {"annotations": {"arc-hooks.dev/scale-set": "arc"}}}
    assert runner_target(scale_set) == RunnerTarget(Scope(repository="acme/app"), ("arc",))


NAMES = st.sampled_from(["acme", "ACME", "beta", "acme-corp"])
LABELS = st.lists(st.sampled_from(["linux", "Linux", "gpu", "self-hosted", "X64", "arm64"]))


@settings(max_examples=200, deadline=None)
@given(
    scope_kind=st.sampled_from(["repository", "organization", "enterprise"]),
    owner=NAMES,
    runner_labels=LABELS,
    job_owner=NAMES,
    job_labels=LABELS,
    in_enterprise=st.booleans(),
)
def test_a_job_is_servable_exactly_when_the_fake_github_gives_it_to_such_a_runner(
    scope_kind: str,
    owner: str,
    runner_labels: list[str],
    job_owner: str,
    job_labels: list[str],
    in_enterprise: bool,
) -> None:
    """The static rule the summary uses agrees with the job dispatch of the fake GitHub, for
    names in any case and labels implicit or not."""
    scope = {
        "repository": Scope(repository=f"{owner}/app"),
        "organization": Scope(organization=owner),
        "enterprise": Scope(enterprise="acme-corp"),
    }[scope_kind]
    github = FakeGitHub(ManualClock())
    if in_enterprise:
        github.set_enterprise_of(job_owner, "ACME-corp")
    token = github.create_registration_token(scope).value
    registered = github.register_runner(scope, "runner-1", runner_labels, token)
    github.set_online(scope, registered.id)

    job = github.submit_job(f"{job_owner}/app", job_labels, 60)

    target = RunnerTarget(scope, tuple(runner_labels))
    expected = target.could_take(job.repository, job.labels, github.enterprise_of)
    assert (job.status == "in_progress") is expected
