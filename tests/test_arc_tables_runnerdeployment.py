"""Ported from actions/actions-runner-controller (Apache-2.0), with attribution

ARC's tests of its RunnerDeployment controller, at revision 2ee6b3b8 of
controllers/actions.summerwind.net/runnerdeployment_controller_test.go:

- `TestNewRunnerReplicaSet`: every check, one test each (ARC's `t.Errorf` does not stop the
  test, so each check is reported on its own here too).
- The Ginkgo specs of `Context("Inside of a new namespace")` / `Describe("when no existing
  resources exist")`: its three `It` blocks.

`TestNewRunnerReplicaSet` calls ARC's `RunnerDeploymentReconciler.newRunnerReplicaSet` with
`CommonRunnerLabels: ["dev"]`. Here the RunnerDeployment goes to this project's sync hook
(`/sync/runnerdeployment`) over HTTP, with `COMMON_RUNNER_LABELS=dev` (ARC's
`--common-runner-labels`), and the RunnerReplicaSet it asks for is read from the answer. ARC's
RunnerDeployment names no enterprise, organization or repository: ARC's function does not
validate, but ARC's admission webhook (`RunnerDeployment.Validate`, "spec needs enterprise,
organization or repository") refuses such an object, and this project's hook answers it with
`Valid=False` and no children; so the template here adds `repository: test/valid` (the
repository of ARC's other tests), which none of the checks looks at.

The Ginkgo specs run ARC's RunnerDeployment reconciler on envtest and poll with Gomega's
`Eventually`/`Consistently`; here the simulated world (`arc_sim.world.World`: Metacontroller
running the shipped manifests against the hook server, a kubelet, runner agents and a fake
GitHub) runs on a virtual clock, polled at ARC's intervals up to ARC's timeouts. ARC's
`k8sClient` is a direct client: listing with the selector of a RunnerDeployment without
`spec.selector` (`LabelSelectorAsSelector(nil)`, i.e. `labels.Nothing()`, whose string is "")
lists every RunnerReplicaSet of the namespace, as these ports do.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from hooks.app import create_app
from hooks.clock import ManualClock
from tests.arc_envtest import Envtest
from tests.hook_app import hook_client, hook_settings
from tests.in_memory_github import InMemoryGitHub

Json = dict[str, Any]

API = "actions.summerwind.dev/v1alpha1"
RUNNER_TEMPLATE_HASH = "runner-template-hash"  # ARC's LabelKeyRunnerTemplateHash


# ============================================================================================
# TestNewRunnerReplicaSet
# ============================================================================================


def new_runner_deployment() -> Json:
    """ARC's `rd`: `example`, selector and template labels foo=bar, runner labels [project1]."""
    return {
        "apiVersion": API,
        "kind": "RunnerDeployment",
        "metadata": {"name": "example", "namespace": "default", "uid": "rd-uid-1", "generation": 1},
        "spec": {
            "selector": {"matchLabels": {"foo": "bar"}},
            "template": {
                "metadata": {"labels": {"foo": "bar"}},
                # repository: see the module docstring (ARC's admission refuses none).
                "spec": {"repository": "test/valid", "labels": ["project1"]},
            },
        },
    }


def new_runner_replica_set(rd: Json) -> Json:
    """ARC's `r.newRunnerReplicaSet(rd)` with `CommonRunnerLabels: ["dev"]`: the one
    RunnerReplicaSet this project's sync hook asks for, given no existing set."""
    clock = ManualClock()
    settings = hook_settings({"COMMON_RUNNER_LABELS": "dev"})
    app = create_app(settings, github=InMemoryGitHub(clock), clock=clock)
    request = {"controller": {}, "parent": rd, "children": {}, "related": {}}
    with hook_client(app) as client:
        response = client.post("/sync/runnerdeployment", json=request)
    assert response.status_code == 200, response.text
    answer: Json = response.json()
    sets: list[Json] = [c for c in answer["children"] if c["kind"] == "RunnerReplicaSet"]
    assert len(sets) == 1, answer  # ARC: `if err != nil { t.Fatalf(...) }`
    return sets[0]


def labels_of(obj: Json) -> dict[str, str]:
    labels: dict[str, str] = obj["metadata"].get("labels") or {}
    return labels


def test_new_runner_replica_set_has_the_template_label_foo_bar() -> None:
    rs = new_runner_replica_set(new_runner_deployment())

    # ARC: `if val, ok := rs.Labels["foo"]; ok { if val != "bar" {...} } else { "foo label does
    # not exist" }`
    assert "foo" in labels_of(rs), "foo label does not exist"
    assert labels_of(rs)["foo"] == "bar", f"foo label does not have bar but {labels_of(rs)['foo']}"


def test_new_runner_replica_set_has_a_runner_template_hash_label() -> None:
    rs = new_runner_replica_set(new_runner_deployment())

    assert RUNNER_TEMPLATE_HASH in labels_of(rs), "missing runner-template-hash label"


def test_new_runner_replica_set_selector_is_the_deployments_plus_the_template_hash() -> None:
    # Not one of ARC's cases; ARC's newRunnerReplicaSet: CloneSelectorAndAddLabel(getSelector(rd),
    # runner-template-hash, hash), getSelector falling back to the deployment's name label.
    rd = new_runner_deployment()
    rd["spec"]["selector"]["matchExpressions"] = [
        {"key": "tier", "operator": "In", "values": ["ci"]}
    ]
    rs = new_runner_replica_set(rd)
    hash_ = labels_of(rs)[RUNNER_TEMPLATE_HASH]
    assert rs["spec"]["selector"] == {
        "matchLabels": {"foo": "bar", RUNNER_TEMPLATE_HASH: hash_},
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["ci"]}],
    }

    del rd["spec"]["selector"]
    rs = new_runner_replica_set(rd)
    assert rs["spec"]["selector"] == {
        "matchLabels": {
            "runner-deployment-name": "example",
            RUNNER_TEMPLATE_HASH: labels_of(rs)[RUNNER_TEMPLATE_HASH],
        }
    }


def test_new_runner_replica_set_appends_the_common_runner_labels() -> None:
    rs = new_runner_replica_set(new_runner_deployment())

    # ARC: cmp.Diff([]string{"project1", "dev"}, rs.Spec.Template.Spec.Labels)
    assert rs["spec"]["template"]["spec"]["labels"] == ["project1", "dev"]


def test_new_runner_replica_set_hash_varies_with_runner_labels() -> None:
    rd = new_runner_deployment()
    rd2 = copy.deepcopy(rd)
    rd2["spec"]["template"]["spec"]["labels"] = ["project2"]

    rs = new_runner_replica_set(rd)
    rs2 = new_runner_replica_set(rd2)

    assert RUNNER_TEMPLATE_HASH in labels_of(rs2), "missing runner-template-hash label"
    hash1 = labels_of(rs).get(RUNNER_TEMPLATE_HASH)
    hash2 = labels_of(rs2)[RUNNER_TEMPLATE_HASH]
    assert hash1 != hash2, (
        "runner replica sets from runner deployments with varying labels must have different "
        f"template hash, but got {hash1} and {hash2}"
    )


def test_new_runner_replica_set_hash_varies_with_meta_labels() -> None:
    rd = new_runner_deployment()
    rd3 = copy.deepcopy(rd)
    rd3["spec"]["template"]["metadata"]["labels"]["foo"] = "baz"

    rs = new_runner_replica_set(rd)
    rs3 = new_runner_replica_set(rd3)

    assert RUNNER_TEMPLATE_HASH in labels_of(rs3), "missing runner-template-hash label"
    hash1 = labels_of(rs).get(RUNNER_TEMPLATE_HASH)
    hash3 = labels_of(rs3)[RUNNER_TEMPLATE_HASH]
    assert hash1 != hash3, (
        "runner replica sets from runner deployments with varying meta labels must have "
        f"different template hash, but got {hash1} and {hash3}"
    )


# ============================================================================================
# Context("Inside of a new namespace") / Describe("when no existing resources exist")
# ============================================================================================

TEST_NAMESPACE = "testns-arcrd"  # ARC: "testns-" + randStringRunes(5), one per It


class DeploymentEnvtest(Envtest):
    """ARC's `SetupDeploymentTest`, with the lists its specs read."""

    def __init__(self) -> None:
        super().__init__("arc-runnerdeployment-test", TEST_NAMESPACE)

    def describe(self) -> str:
        """The namespace's RunnerReplicaSets, for a failure's message."""
        sets = self.runner_replica_sets(None)
        return "RunnerReplicaSets in the namespace: " + ", ".join(
            f"{s['metadata']['name']} labels={s['metadata'].get('labels')} "
            f"replicas={s['spec'].get('replicas')}"
            for s in sets
        )

    def runner_replica_sets(self, selector: Json | None) -> list[Json]:
        """k8sClient.List(&RunnerReplicaSetList, InNamespace, MatchingLabelsSelector)."""
        return self.world.store.list_objects("RunnerReplicaSet", TEST_NAMESPACE, selector)

    def only_replicas(self, selector: Json | None) -> int | None:
        """The `func() (int, error)` of ARC's Eventually: the one set's spec.replicas, or an
        error (None here) when there is not exactly one."""
        sets = self.runner_replica_sets(selector)
        if len(sets) != 1:
            return None  # fmt.Errorf("runnerreplicasets is not 1 but %d", ...)
        return int(sets[0]["spec"]["replicas"])

    def only_selector(self) -> Json | None:
        sets = self.runner_replica_sets(None)
        if len(sets) != 1:
            return None
        selector: Json | None = sets[0]["spec"].get("selector")
        return selector


@pytest.fixture
def env() -> Iterator[DeploymentEnvtest]:
    yield DeploymentEnvtest()


def runner_deployment(name: str, *, with_selector: bool) -> Json:
    spec: Json = {
        "replicas": 1,
        "template": {
            "spec": {
                "repository": "test/valid",
                "image": "bar",
                "env": [{"name": "FOO", "value": "FOOVALUE"}],
            }
        },
    }
    if with_selector:
        spec["selector"] = {"matchLabels": {"foo": "bar"}}
        spec["template"]["metadata"] = {"labels": {"foo": "bar"}}
    return {
        "apiVersion": API,
        "kind": "RunnerDeployment",
        "metadata": {"name": name, "namespace": TEST_NAMESPACE},
        "spec": spec,
    }


def scale_to_two(env: DeploymentEnvtest, name: str) -> Json:
    """`rd.Spec.Replicas = intPtr(2); k8sClient.Update(ctx, &rd)`; returns the updated rd."""
    rd = env.world.store.get("RunnerDeployment", TEST_NAMESPACE, name)
    assert rd is not None, "failed to get test RunnerReplicaSet resource"
    rd["spec"]["replicas"] = 2
    return env.world.store.update(rd)


def selector_of(rd: Json) -> Json | None:
    """metav1.LabelSelectorAsSelector(rd.Spec.Selector): nil selects everything (see above)."""
    selector: Json | None = rd["spec"].get("selector")
    return selector


# It("should create a new RunnerReplicaSet resource from the specified template, add a another
# RunnerReplicaSet on template modification, and eventually removes old runnerreplicasets")
def test_create_runner_replica_set_from_template_and_scale(env: DeploymentEnvtest) -> None:
    name = "example-runnerdeploy-1"
    rd = runner_deployment(name, with_selector=True)
    env.world.apply(rd)

    env.eventually(lambda: env.only_replicas(selector_of(rd)), 1, timeout=5, interval=0.5)

    updated = scale_to_two(env, name)

    env.eventually(lambda: env.only_replicas(selector_of(updated)), 2, timeout=5, interval=0.5)


# It("should create a new RunnerReplicaSet resource from the specified template without labels
# and selector, add a another RunnerReplicaSet on template modification, and eventually removes
# old runnerreplicasets")
def test_create_runner_replica_set_without_labels_and_selector_and_scale(
    env: DeploymentEnvtest,
) -> None:
    name = "example-runnerdeploy-2"
    rd = runner_deployment(name, with_selector=False)
    env.world.apply(rd)

    env.eventually(lambda: env.only_replicas(selector_of(rd)), 1, timeout=5, interval=0.5)

    updated = scale_to_two(env, name)

    env.eventually(lambda: env.only_replicas(selector_of(updated)), 2, timeout=5, interval=0.5)


# It("should adopt RunnerReplicaSet created before 0.18.0 to have Spec.Selector")
def test_adopt_runner_replica_set_created_before_0_18_0_to_have_spec_selector(
    env: DeploymentEnvtest,
) -> None:
    name = "example-runnerdeploy-2"
    env.world.apply(runner_deployment(name, with_selector=False))

    env.eventually(lambda: len(env.runner_replica_sets(None)), 1, timeout=1, interval=0.5)

    env.consistently(env.only_selector, lambda got: got is not None, duration=1, interval=0.5)

    # "We simulate the old, pre 0.18.0 RunnerReplicaSet by updating it."
    sets = env.runner_replica_sets(None)
    assert len(sets) == 1
    rs17 = sets[0]
    del rs17["spec"]["selector"]
    env.world.store.update(rs17)

    env.eventually(lambda: env.only_selector() is not None, True, timeout=1, interval=0.5)
