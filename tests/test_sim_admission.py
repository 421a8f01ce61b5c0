"""Admission in the simulated API server: custom resources against their CRD's structural
schema, built-in kinds against Kubernetes' own schema and rules, ObjectMeta everywhere; refusals
worded as kube-apiserver words them."""

from __future__ import annotations

import base64
import copy
import itertools
import random
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openapi_schema_validator import OAS30Validator, oas30_format_checker
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from arc_sim.admission import Admission, builtin_schemas, crds_under
from arc_sim.events import EventLoop
from arc_sim.kube_rules import dns_subdomain, label_value
from arc_sim.metacontroller.emulator import MetacontrollerEmulator
from arc_sim.metacontroller.transport import AsgiTransport
from arc_sim.schema_check import FieldError
from arc_sim.store import BadRequest, Invalid, KubeObject, NotServed, ObjectStore
from arc_sim.world import default_manifests
from hooks.clock import ManualClock
from tests.builtin_schema_source import SCHEMA_FILE, render

ARC = "actions.summerwind.dev/v1alpha1"
NS = "default"
CRDS = crds_under(default_manifests() / "crds")


def new_store(*, serve_unknown_kinds: bool = False) -> ObjectStore:
    admission = Admission(serve_unknown_kinds=serve_unknown_kinds)
    for crd in CRDS:
        admission.add_crd(crd)
    return ObjectStore(ManualClock(), admission=admission)


def hra(name: str = "auto", **spec: Any) -> KubeObject:
    return {
        "apiVersion": ARC,
        "kind": "HorizontalRunnerAutoscaler",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "scaleTargetRef": {"kind": "RunnerDeployment", "name": "runners"},
            "minReplicas": 0,
            "maxReplicas": 10,
            **spec,
        },
    }


def runner(name: str = "r1", **spec: Any) -> KubeObject:
    return {
        "apiVersion": ARC,
        "kind": "Runner",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"organization": "acme", "labels": ["linux"], **spec},
    }


def pod(name: str = "p", **spec: Any) -> KubeObject:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"containers": [{"name": "runner", "image": "runner:1"}], **spec},
    }


def statefulset(name: str = "rs", **spec: Any) -> KubeObject:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": 1,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "runner", "image": "runner:1"}]},
            },
            **spec,
        },
    }


def refusal(error: pytest.ExceptionInfo[Exception]) -> str:
    return str(error.value)


# ------------------------------------------------------------------ custom resources


def test_a_string_where_the_crd_says_integer_is_refused_as_the_api_server_words_it() -> None:
    store = new_store()

    with pytest.raises(Invalid) as error:
        store.create(hra(maxReplicas="forty"))

    assert refusal(error) == (
        'HorizontalRunnerAutoscaler.actions.summerwind.dev "auto" is invalid: '
        'spec.maxReplicas: Invalid value: "string": '
        'spec.maxReplicas in body must be of type integer: "string"'
    )
    assert error.value.status == 422
    assert error.value.causes == (
        FieldError(
            "Invalid value",
            "spec.maxReplicas",
            "string",
            'spec.maxReplicas in body must be of type integer: "string"',
        ),
    )
    assert store.get("HorizontalRunnerAutoscaler", NS, "auto") is None
    assert store.refused == 1


def test_every_error_is_listed_with_its_path() -> None:
    store = new_store()
    overrides = [{"endTime": "2026-01-05T10:00:00Z", "minReplicas": -1}]

    with pytest.raises(Invalid) as error:
        store.create(
            hra(
                scaleTargetRef={"kind": "Deployment", "name": "x"},
                scheduledOverrides=overrides,
            )
        )

    assert [str(cause) for cause in error.value.causes] == [
        'spec.scaleTargetRef.kind: Unsupported value: "Deployment": supported values: '
        '"RunnerDeployment", "RunnerSet"',
        "spec.scheduledOverrides[0].minReplicas: Invalid value: -1: "
        "spec.scheduledOverrides[0].minReplicas in body should be greater than or equal to 0",
        "spec.scheduledOverrides[0].startTime: Required value",
    ]
    assert refusal(error).startswith(
        'HorizontalRunnerAutoscaler.actions.summerwind.dev "auto" is invalid: [spec.scaleTarget'
    )


@pytest.mark.parametrize(
    ("spec", "cause"),
    [
        (
            {"organization": "acme/app"},
            'spec.organization: Invalid value: "acme/app": spec.organization in body should '
            "match '^[^/]+$'",
        ),
        (
            {"labels": "linux"},
            'spec.labels: Invalid value: "string": spec.labels in body must be of type array: '
            '"string"',
        ),
        (
            {"ephemeral": "yes"},
            'spec.ephemeral: Invalid value: "string": spec.ephemeral in body must be of type '
            'boolean: "string"',
        ),
        (
            {"volumeSizeLimit": True},
            'spec.volumeSizeLimit: Invalid value: "boolean": spec.volumeSizeLimit in body must '
            'be of type integer,string: "boolean"',
        ),
        (
            {"volumeSizeLimit": "lots"},
            'spec.volumeSizeLimit: Invalid value: "lots": spec.volumeSizeLimit in body should '
            "match '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE]"
            "(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$'",
        ),
    ],
)
def test_runner_specs_breaking_the_crd_are_refused(spec: dict[str, Any], cause: str) -> None:
    with pytest.raises(Invalid) as error:
        new_store().create(runner(**spec))

    assert [str(c) for c in error.value.causes] == [cause]


@pytest.mark.parametrize("size", [1, "1Gi", "500M"])
def test_int_or_string_takes_either(size: object) -> None:
    stored = new_store().create(runner(volumeSizeLimit=size))

    assert stored["spec"]["volumeSizeLimit"] == size


def test_an_integral_number_is_an_integer_as_go_openapi_has_it() -> None:
    stored = new_store().create(hra(maxReplicas=12.0))

    assert stored["spec"]["maxReplicas"] == 12
    with pytest.raises(Invalid):
        new_store().create(hra(maxReplicas=12.5))


def test_a_bad_time_is_refused_with_its_format() -> None:
    with pytest.raises(Invalid) as error:
        new_store().create(
            hra(scheduledOverrides=[{"startTime": "monday", "endTime": "2026-01-05T10:00:00Z"}])
        )

    assert [str(c) for c in error.value.causes] == [
        'spec.scheduledOverrides[0].startTime: Invalid value: "monday": '
        'spec.scheduledOverrides[0].startTime in body must be of type date-time: "monday"'
    ]


def test_unknown_fields_are_refused_under_strict_field_validation_as_kubectl_asks() -> None:
    store = new_store()

    with pytest.raises(BadRequest) as error:
        store.create(runner(organisation="acme"), field_validation="Strict")

    assert error.value.status == 400
    assert refusal(error) == (
        'Runner in version "v1alpha1" cannot be handled as a Runner: strict decoding error: '
        'unknown field "spec.organisation"'
    )


def test_unknown_fields_are_pruned_and_counted_for_other_clients() -> None:
    store = new_store()
    obj = runner(organisation="acme")
    obj["extra"] = {"a": 1}

    stored = store.create(obj)

    assert stored["spec"] == {"organization": "acme", "labels": ["linux"]}
    assert "extra" not in stored
    assert store.pruned_fields == 2
    assert obj["spec"]["organisation"] == "acme"  # the caller's object is left alone


def test_fields_the_crd_preserves_are_kept_unchecked() -> None:
    containers = [{"name": "runner", "anything": {"goes": [1, "two"]}}]

    stored = new_store().create(runner(containers=containers))

    assert stored["spec"]["containers"] == containers


def test_an_object_schema_without_properties_prunes_what_is_in_it() -> None:
    trigger = {"githubEvent": {"push": {"branches": ["main"]}}, "duration": "5m", "amount": 1}

    stored = new_store().create(hra(scaleUpTriggers=[trigger]))

    assert stored["spec"]["scaleUpTriggers"] == [
        {"githubEvent": {"push": {}}, "duration": "5m", "amount": 1}
    ]


def test_nulls_in_fields_that_are_not_nullable_are_pruned() -> None:
    stored = new_store().create(hra(minReplicas=None))

    assert "minReplicas" not in stored["spec"]


def test_defaults_of_the_schema_are_applied() -> None:
    reservation = {
        "apiVersion": "arc-hooks.dev/v1alpha1",
        "kind": "CapacityReservation",
        "metadata": {"name": "job-1", "namespace": NS},
        "spec": {
            "effectiveTime": "2026-01-05T09:00:00Z",
            "expirationTime": "2026-01-05T09:10:00Z",
        },
    }

    stored = new_store().create(reservation)

    assert stored["spec"]["replicas"] == 1


def test_status_is_checked_through_the_status_subresource() -> None:
    store = new_store()
    store.enable_status_subresource("HorizontalRunnerAutoscaler")
    store.create(hra())

    with pytest.raises(Invalid) as error:
        store.update_status(
            {"kind": "HorizontalRunnerAutoscaler", "metadata": {"name": "auto", "namespace": NS},
             "status": {"desiredReplicas": "3"}}
        )  # fmt: skip

    assert [c.field for c in error.value.causes] == ["status.desiredReplicas"]
    written = store.update_status(
        {"kind": "HorizontalRunnerAutoscaler", "metadata": {"name": "auto", "namespace": NS},
         "status": {"desiredReplicas": 3}}
    )  # fmt: skip
    assert written["status"] == {"desiredReplicas": 3}


def test_an_update_is_checked_like_a_create() -> None:
    store = new_store()
    current = store.create(hra())
    changed = copy.deepcopy(current)
    changed["spec"]["maxReplicas"] = "forty"

    with pytest.raises(Invalid):
        store.update(changed)

    stored = store.get("HorizontalRunnerAutoscaler", NS, "auto")
    assert stored is not None and stored["spec"]["maxReplicas"] == 10


def test_a_kind_the_server_does_not_serve_is_not_found() -> None:
    with pytest.raises(NotServed) as error:
        new_store().create({**runner(), "kind": "Runer"})

    assert error.value.status == 404
    assert refusal(error) == (
        'no matches for kind "Runer" in version "actions.summerwind.dev/v1alpha1"'
    )


def test_a_store_serving_any_kind_still_checks_metadata() -> None:
    store = new_store(serve_unknown_kinds=True)
    store.create({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})

    with pytest.raises(Invalid) as error:
        store.create({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "W"}})

    assert [c.field for c in error.value.causes] == ["metadata.name"]


# ------------------------------------------------------------------ metadata


@pytest.mark.parametrize(
    ("metadata", "cause"),
    [
        ({"namespace": NS}, "metadata.name: Required value: name or generateName is required"),
        ({"name": "r1"}, "metadata.namespace: Required value"),
        (
            {"name": "Runner_1", "namespace": NS},
            'metadata.name: Invalid value: "Runner_1": a lowercase RFC 1123 subdomain must '
            "consist of lower case alphanumeric characters, '-' or '.', and must start and end "
            "with an alphanumeric character (e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
        (
            {"name": "r1", "namespace": NS, "labels": {"team": "a b"}},
            'metadata.labels: Invalid value: "a b": a valid label must be an empty string or '
            "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
            "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
        (
            {"name": "r1", "namespace": NS, "finalizers": ["a/b", "a/b"]},
            'metadata.finalizers[1]: Duplicate value: "a/b"',
        ),
        (
            {"name": "r1", "namespace": NS, "labels": {"team": 7}},
            'metadata.labels[team]: Invalid value: "integer": json: cannot unmarshal integer '
            "into Go struct field metadata.labels[team] of type string",
        ),
    ],
)
def test_object_meta_rules(metadata: dict[str, Any], cause: str) -> None:
    obj = {**runner(), "metadata": metadata}

    with pytest.raises((Invalid, BadRequest)) as error:
        new_store().create(obj)

    causes = getattr(error.value, "causes", ())
    assert cause in [str(c) for c in causes] or cause in refusal(error)


def test_generate_name_makes_a_valid_name() -> None:
    obj = runner()
    obj["metadata"] = {"generateName": "r-", "namespace": NS}

    stored = new_store().create(obj)

    assert stored["metadata"]["name"].startswith("r-")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abz09-.A_/", min_size=0, max_size=12), st.integers(0, 260))
def test_names_are_accepted_exactly_when_they_are_dns_subdomains(stem: str, pad: int) -> None:
    """At the 253-character boundary, and for every character class around the rule."""
    name = stem + "a" * pad if stem else stem
    store = new_store()
    obj = runner(name=name)

    try:
        store.create(obj)
        accepted = True
    except Invalid:
        accepted = False

    labels = name.split(".")
    expected = (
        0 < len(name) <= 253
        and all(labels)
        and all(
            label[0].isalnum()
            and label[-1].isalnum()
            and all(c.islower() or c.isdigit() or c == "-" for c in label)
            for label in labels
        )
    )
    assert accepted is expected, name
    assert (not dns_subdomain(name)) is expected or not name


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aZ9-_.: ", max_size=70))
def test_label_values_are_accepted_exactly_as_kubernetes_allows(value: str) -> None:
    allowed = value == "" or (
        len(value) <= 63
        and value[0].isalnum()
        and value[-1].isalnum()
        and all(c.isalnum() or c in "-_." for c in value)
    )

    assert (not label_value(value)) is allowed


# ------------------------------------------------------------------ built-in kinds


def test_a_pod_of_the_wrong_shape_cannot_be_decoded() -> None:
    with pytest.raises(BadRequest) as error:
        new_store().create(pod(containers={"name": "runner"}))

    assert refusal(error) == (
        'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal object into '
        "Go struct field spec.containers of type array"
    )


@pytest.mark.parametrize(
    ("spec", "causes"),
    [
        ({"containers": []}, ["spec.containers: Required value"]),
        (
            {"containers": [{"name": "runner", "image": "a"}, {"name": "runner", "image": "b"}]},
            ['spec.containers[1].name: Duplicate value: "runner"'],
        ),
        ({"containers": [{"name": "runner"}]}, ["spec.containers[0].image: Required value"]),
        ({"containers": [{"image": "a"}]}, ["spec.containers[0].name: Required value"]),
        (
            {"containers": [{"name": "runner", "image": "a", "volumeMounts": [{"name": "work"}]}]},
            [
                "spec.containers[0].volumeMounts[0].mountPath: Required value",
                'spec.containers[0].volumeMounts[0].name: Not found: "work"',
            ],
        ),
        (
            {"restartPolicy": "Sometimes"},
            [
                'spec.restartPolicy: Unsupported value: "Sometimes": supported values: '
                '"Always", "OnFailure", "Never"'
            ],
        ),
    ],
)
def test_pod_rules_beyond_the_schema(spec: dict[str, Any], causes: list[str]) -> None:
    with pytest.raises(Invalid) as error:
        new_store().create(pod(**spec))

    assert sorted(str(c) for c in error.value.causes) == sorted(causes)


def test_a_pod_spec_is_immutable_but_for_images_and_the_binding() -> None:
    store = new_store()
    created = store.create(pod())

    bound = copy.deepcopy(created)
    bound["spec"]["nodeName"] = "node-1"
    bound["spec"]["containers"][0]["image"] = "runner:2"
    store.update(bound)
    changed = store.get("Pod", NS, "p")
    assert changed is not None
    changed["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}]

    with pytest.raises(Invalid) as error:
        store.update(changed)

    assert refusal(error).startswith(
        'Pod "p" is invalid: spec: Forbidden: pod updates may not change fields other than '
        "`spec.containers[*].image`"
    )


def test_a_statefulset_runs_its_pods_with_restart_policy_always_and_a_matching_selector() -> None:
    bad = statefulset()
    bad["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    bad["spec"]["selector"] = {"matchLabels": {"app": "other"}}

    with pytest.raises(Invalid) as error:
        new_store().create(bad)

    assert sorted(str(c) for c in error.value.causes) == [
        'spec.template.metadata.labels: Invalid value: {"app":"rs"}: `selector` does not '
        "match template `labels`",
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
    ]


def test_a_statefulset_takes_new_replicas_but_not_a_new_selector() -> None:
    store = new_store()
    current = store.create(statefulset())
    scaled = copy.deepcopy(current)
    scaled["spec"]["replicas"] = 3
    store.update(scaled)
    moved = store.get("StatefulSet", NS, "rs")
    assert moved is not None
    moved["spec"]["serviceName"] = "other"

    with pytest.raises(Invalid) as error:
        store.update(moved)

    assert [c.field for c in error.value.causes] == ["spec"]


def test_secret_string_data_is_folded_into_data_and_data_must_be_base64() -> None:
    store = new_store()
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "gh", "namespace": NS},
        "data": {"a": base64.b64encode(b"one").decode()},
        "stringData": {"github_token": "ghp_x"},
    }

    stored = store.create(secret)

    assert "stringData" not in stored
    assert stored["type"] == "Opaque"
    assert stored["data"] == {"a": "b25l", "github_token": base64.b64encode(b"ghp_x").decode()}
    with pytest.raises(BadRequest) as error:
        store.create({**secret, "metadata": {"name": "bad", "namespace": NS}, "data": {"a": "%"}})
    assert "illegal base64 data" in refusal(error)


def test_a_role_binding_keeps_its_role() -> None:
    store = new_store()
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "b", "namespace": NS},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "a"},
        "subjects": [{"kind": "ServiceAccount", "name": "runner", "namespace": NS}],
    }
    current = copy.deepcopy(store.create(binding))
    current["roleRef"]["name"] = "b"

    with pytest.raises(Invalid) as error:
        store.update(current)

    assert [c.field for c in error.value.causes] == ["roleRef"]


def test_an_event_needs_its_involved_object() -> None:
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": NS}}

    with pytest.raises(Invalid) as error:
        new_store().create(event)

    assert [str(c) for c in error.value.causes] == ["involvedObject: Required value"]


def test_the_shipped_builtin_schemas_are_the_ones_extracted_from_kubernetes_validate() -> None:
    shipped = (default_manifests().parent / "schemas" / SCHEMA_FILE).read_text("utf-8")

    assert shipped == render()
    assert set(builtin_schemas()["kinds"]) >= {
        "v1/Pod",
        "v1/Secret",
        "v1/Event",
        "v1/ServiceAccount",
        "v1/PersistentVolumeClaim",
        "apps/v1/StatefulSet",
        "rbac.authorization.k8s.io/v1/Role",
        "rbac.authorization.k8s.io/v1/RoleBinding",
    }


# ------------------------------------------------------------------ against reference validators


def _leaf_paths(value: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in _leaf_paths(item, (*path, key))]
    if isinstance(value, list):
        return [p for index, item in enumerate(value) for p in _leaf_paths(item, (*path, index))]
    return [path]


def _replaced(obj: Any, path: tuple[str | int, ...], value: Any) -> Any:
    changed = copy.deepcopy(obj)
    target = changed
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return changed


FULL_HRA = hra(
    scheduledOverrides=[
        {
            "startTime": "2026-01-10T00:00:00Z",
            "endTime": "2026-01-12T00:00:00Z",
            "minReplicas": 0,
            "recurrenceRule": {"frequency": "Weekly", "untilTime": "2027-01-01T00:00:00Z"},
        }
    ],
    metrics=[
        {"type": "PercentageRunnersBusy", "scaleUpThreshold": "0.75", "repositoryNames": ["a"]}
    ],
    capacityReservations=[{"name": "x", "replicas": 1, "expirationTime": "2026-01-05T10:00:00Z"}],
    scaleDownDelaySecondsAfterScaleOut=300,
)
HRA_LEAVES = _leaf_paths(FULL_HRA["spec"])
JSON_SCALARS = st.one_of(
    st.integers(-(2**31), 2**31 - 1),
    st.booleans(),
    # (an integral float is an integer to the API server, not to OpenAPI 3: tested apart)
    st.floats(allow_nan=False, allow_infinity=False, width=32).filter(lambda f: f % 1 != 0),
    st.text(max_size=8),
    st.sampled_from(["Weekly", "RunnerSet", "2026-01-05T09:00:00Z", "-1"]),
    st.just([]),
    st.just({}),
)


def _hra_schema() -> dict[str, Any]:
    [crd] = [c for c in CRDS if c["spec"]["names"]["kind"] == "HorizontalRunnerAutoscaler"]
    spec_schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"][
        "properties"
    ]["spec"]
    return spec_schema


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(HRA_LEAVES), JSON_SCALARS)
def test_crd_verdicts_agree_with_an_openapi_3_validator(
    path: tuple[str | int, ...], value: Any
) -> None:
    """One field of a complete HRA replaced by any JSON value: admitted exactly when an
    independent OpenAPI 3.0 validator accepts the spec."""
    spec = _replaced(FULL_HRA["spec"], path, value)
    reference = OAS30Validator(_hra_schema(), format_checker=oas30_format_checker)

    try:
        new_store().create({**FULL_HRA, "spec": spec})
        admitted = True
    except Invalid:
        admitted = False

    assert admitted is reference.is_valid(spec), (path, value)


POD = pod(
    volumes=[{"name": "work", "emptyDir": {}}],
    containers=[
        {
            "name": "runner",
            "image": "runner:1",
            "env": [{"name": "A", "value": "1"}],
            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
            "volumeMounts": [{"name": "work", "mountPath": "/work"}],
            "securityContext": {"privileged": False, "runAsUser": 1000},
        }
    ],
    terminationGracePeriodSeconds=30,
    nodeSelector={"disk": "ssd"},
    tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
)
POD_LEAVES = [p for p in _leaf_paths(POD["spec"]) if p[-1] not in ("name", "image", "mountPath")]
TYPED_VALUES = st.one_of(
    st.integers(-100, 100000),
    st.booleans(),
    st.sampled_from(["x", "TCP"]),
    st.just([]),
    st.just({}),
    st.just([1]),
)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(POD_LEAVES), TYPED_VALUES)
def test_pod_decoding_agrees_with_kubernetes_validate(
    path: tuple[str | int, ...], value: Any
) -> None:
    """One field of a pod replaced by a value of any JSON type: refused as undecodable exactly
    when kubernetes-validate (Kubernetes' schema) refuses it."""
    spec = _replaced(POD["spec"], path, value)
    obj = {**POD, "spec": spec}
    try:
        kubernetes_validate.validate(obj, "1.33", strict=False)
        reference_ok = True
    except kubernetes_validate.ValidationError:
        reference_ok = False

    try:
        new_store().create(obj)
        decoded = True
    except BadRequest:
        decoded = False
    except Invalid:
        decoded = True

    assert decoded is reference_ok, (path, value)


# ------------------------------------------------------------------ Metacontroller's applies


def test_a_child_the_api_server_refuses_fails_the_sync_which_is_retried_with_backoff() -> None:
    """As in Metacontroller: the other children are still applied, the sync fails with the API
    server's message and is retried with backoff, and the parent's status from the hook's answer
    is still written (`syncParentObject` updates status whatever the children's errors)."""
    clock = ManualClock()
    loop = EventLoop(clock, seed=1)
    store = new_store(serve_unknown_kinds=True)
    calls: list[float] = []

    async def sync(request: Request) -> JSONResponse:
        calls.append(loop.now.timestamp())
        children = [
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad"}, "spec": {}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "good"}},
        ]
        return JSONResponse({"status": {"ok": True}, "children": children})

    app = Starlette(routes=[Route("/sync", sync, methods=["POST"])])
    transport = AsgiTransport([app], random.Random(1), clock=clock)
    emulator = MetacontrollerEmulator(store, loop, transport)
    emulator.load_directory(METACONTROLLER_FIXTURES / "crds.yaml")
    emulator.load_manifests([WIDGET_CONTROLLER])
    emulator.start()
    store.create(
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w1", "namespace": NS},
            "spec": {},
        }
    )

    loop.run_for(60)
    transport.close()

    assert store.get("ConfigMap", NS, "good") is not None
    assert store.get("Pod", NS, "bad") is None
    widget = store.get("Widget", NS, "w1")
    assert widget is not None and widget["status"]["ok"] is True
    assert emulator.errors["apply"] == len(calls) >= 4
    assert 'Pod "bad" is invalid: spec.containers: Required value' in (
        emulator.stats.recent_errors[-1].message
    )
    gaps = [later - earlier for earlier, later in itertools.pairwise(calls)]
    assert gaps == sorted(gaps) and gaps[-1] > gaps[0]  # backoff


METACONTROLLER_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "metacontroller"
WIDGET_CONTROLLER = {
    "apiVersion": "metacontroller.k8s.io/v1alpha1",
    "kind": "CompositeController",
    "metadata": {"name": "widgets"},
    "spec": {
        "parentResource": {"apiVersion": "example.com/v1", "resource": "widgets"},
        "childResources": [
            {"apiVersion": "v1", "resource": "pods", "updateStrategy": {"method": "OnDelete"}},
            {"apiVersion": "v1", "resource": "configmaps", "updateStrategy": {"method": "InPlace"}},
        ],
        "generateSelector": True,
        "hooks": {"sync": {"version": "v2", "webhook": {"url": "http://widget-hooks.hooks/sync"}}},
    },
}
