"""The install manifests in metacontroller/ (and the image they run): valid, and consistent."""

from __future__ import annotations

import copy
import functools
import os
import re
import subprocess
import tempfile
import textwrap
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import kubernetes_validate
import pytest
import yaml

from hooks.deployment.controller import customize_runner_deployment
from hooks.resources import crd as crdgen
from hooks.resources.autoscaler import HorizontalRunnerAutoscaler
from hooks.resources.common import ResourceModel
from hooks.resources.replicaset import RunnerDeployment, RunnerReplicaSet
from hooks.resources.runner import Runner
from hooks.resources.runnerset import RunnerSet
from hooks.settings import Settings
from tests.kubectl import kustomize_available, kustomize_command

ROOT = Path(__file__).resolve().parent.parent
MANIFESTS = ROOT / "metacontroller"
REFERENCE = Path(__file__).resolve().parent / "reference"
METACONTROLLER_CRDS = REFERENCE / "metacontroller" / "metacontroller-crds-v4.17.2.yaml"
KUBERNETES_VERSION = "1.33.0"

# The hook paths the app serves. Every webhook a controller names must be one of them.
APP_HOOK_PATHS = {
    "/sync/runner",
    "/finalize/runner",
    "/customize/runner",
    "/sync/runnerreplicaset",
    "/sync/runnerdeployment",
    "/customize/runnerdeployment",
    "/finalize/runnerdeployment",
    "/sync/runnerset",
    "/finalize/runnerset",
    "/customize/runnerset",
    "/sync/horizontalrunnerautoscaler",
    "/customize/horizontalrunnerautoscaler",
    "/sync/runnerpod",
    "/finalize/runnerpod",
    "/customize/runnerpod",
}
ARC_API_VERSION = "actions.summerwind.dev/v1alpha1"
MODELS: dict[str, type[ResourceModel]] = {
    "Runner": Runner,
    "RunnerReplicaSet": RunnerReplicaSet,
    "RunnerDeployment": RunnerDeployment,
    "RunnerSet": RunnerSet,
    "HorizontalRunnerAutoscaler": HorizontalRunnerAutoscaler,
}
CONTAINER_PORT = 8080
UID = 10001
IMAGE = "ghcr.io/arc-hooks/arc-hooks"
# Groups validated against CRD schemas rather than Kubernetes' built-in schemas.
CUSTOM_GROUPS = {"metacontroller.k8s.io", "actions.summerwind.dev"}
# ARC's Secret and keys, mapped to ARC's environment names.
CREDENTIAL_ENV = {
    "GITHUB_TOKEN": "github_token",
    "GITHUB_APP_ID": "github_app_id",
    "GITHUB_APP_INSTALLATION_ID": "github_app_installation_id",
    "GITHUB_APP_PRIVATE_KEY": "github_app_private_key",
}


@functools.cache
def _parse(path: Path) -> list[dict[str, Any]]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with path.open(encoding="utf-8") as f:
        return [doc for doc in yaml.load_all(f, Loader=loader) if doc]


def _load(path: Path) -> list[dict[str, Any]]:
    return copy.deepcopy(_parse(path))


def _kustomization() -> dict[str, Any]:
    (kustomization,) = _load(MANIFESTS / "kustomization.yaml")
    return kustomization


def _objects() -> list[dict[str, Any]]:
    """Every object `kubectl apply -k metacontroller/` installs."""
    objects = []
    for resource in _kustomization()["resources"]:
        objects += _load(MANIFESTS / resource)
    return objects


def _of_kind(kind: str) -> list[dict[str, Any]]:
    return [obj for obj in _objects() if obj["kind"] == kind]


def _granted(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def _one(kind: str, name: str) -> dict[str, Any]:
    (obj,) = [o for o in _of_kind(kind) if o["metadata"]["name"] == name]
    return obj


def _group(obj: dict[str, Any]) -> str:
    api_version: str = obj["apiVersion"]
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def _object_id(obj: dict[str, Any]) -> str:
    return f"{obj['kind']}/{obj['metadata']['name']}"


def _metacontroller_schema(kind: str) -> dict[str, Any]:
    for crd in _load(METACONTROLLER_CRDS):
        if crd["spec"]["names"]["kind"] == kind:
            return crdgen.openapi_schema(crd)
    raise KeyError(kind)


def _webhooks(controller: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    yield from controller["spec"].get("hooks", {}).items()


def _deployment() -> dict[str, Any]:
    return _one("Deployment", "arc-hooks")


def _container() -> dict[str, Any]:
    containers: list[dict[str, Any]] = _deployment()["spec"]["template"]["spec"]["containers"]
    (container,) = containers
    return container


# ---------------------------------------------------------------------------------------------
# The kustomization


def test_kustomization_lists_every_manifest() -> None:
    listed = {MANIFESTS / r for r in _kustomization()["resources"]}
    assert all(path.is_file() for path in listed)
    on_disk = {
        path
        for path in MANIFESTS.rglob("*.yaml")
        if path.name != "kustomization.yaml"
        and not {"samples", "components"} & set(path.relative_to(MANIFESTS).parts)
    }
    assert on_disk == listed, "add new manifests to metacontroller/kustomization.yaml"


def test_kustomization_installs_every_generated_crd() -> None:
    resources = set(_kustomization()["resources"])
    assert {f"crds/{name}" for name in crdgen.all_crds()} <= resources


def test_kustomization_sets_no_namespace() -> None:
    # kustomize would stamp it on CompositeControllers too, which are cluster-scoped.
    assert "namespace" not in _kustomization()


def test_image_is_overridable_and_matches_the_release() -> None:
    (entry,) = _kustomization()["images"]
    name, _, tag = _container()["image"].rpartition(":")
    assert entry["name"] == name == IMAGE
    with (ROOT / "pyproject.toml").open("rb") as f:
        version = tomllib.load(f)["project"]["version"]
    assert tag == entry["newTag"] == version


def test_kustomize_builds() -> None:
    # `kubectl apply -k metacontroller/` is the install command. .ci/run installs kustomize, so
    # CI builds the kustomization for real; without it, what can be checked here is that it
    # uses nothing beyond the resource list and image override this file reads itself.
    if not kustomize_available():
        assert set(_kustomization()) == {"apiVersion", "kind", "resources", "images"}
        assert all((MANIFESTS / resource).is_file() for resource in _kustomization()["resources"])
        return
    result = subprocess.run(
        [*_kustomize(), str(MANIFESTS)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    built = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    assert sorted(map(_object_id, built)) == sorted(map(_object_id, _objects()))


def test_every_object_is_labelled_part_of_arc_hooks() -> None:
    for obj in _objects():
        labels = obj["metadata"].get("labels", {})
        assert labels.get("app.kubernetes.io/part-of") == "arc-hooks", _object_id(obj)


def test_namespaced_objects_live_in_the_arc_hooks_namespace() -> None:
    (namespace,) = _of_kind("Namespace")
    for obj in _objects():
        if _group(obj) in ("", "apps", "policy") and obj["kind"] != "Namespace":
            assert obj["metadata"].get("namespace") == namespace["metadata"]["name"]


# ---------------------------------------------------------------------------------------------
# Schemas


@pytest.mark.parametrize(
    "obj",
    [o for o in _objects() if _group(o) not in CUSTOM_GROUPS],
    ids=_object_id,
)
def test_builtin_objects_validate(obj: dict[str, Any]) -> None:
    kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


@pytest.mark.parametrize(
    "obj",
    [o for o in _objects() if _group(o) == "metacontroller.k8s.io"],
    ids=_object_id,
)
def test_metacontroller_objects_validate_against_metacontrollers_crds(obj: dict[str, Any]) -> None:
    # Unknown fields are errors here: kubectl's strict field validation rejects them too.
    schema = crdgen.to_json_schema(_metacontroller_schema(obj["kind"]), reject_unknown=True)
    jsonschema.Draft202012Validator(schema).validate(obj)
    assert "namespace" not in obj["metadata"], "Metacontroller's controllers are cluster-scoped"


def _samples() -> list[tuple[str, dict[str, Any]]]:
    return [
        (path.name, sample)
        for path in sorted((MANIFESTS / "samples").glob("*.yaml"))
        for sample in _load(path)
    ]


def test_samples_cover_the_parents() -> None:
    kinds = {sample["kind"] for _, sample in _samples()}
    assert {
        "Runner",
        "RunnerReplicaSet",
        "RunnerDeployment",
        "RunnerSet",
        "HorizontalRunnerAutoscaler",
    } <= kinds


@pytest.mark.parametrize(
    ("file", "sample"), _samples(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_samples_validate_against_our_crds(file: str, sample: dict[str, Any]) -> None:
    (crd,) = [c for c in crdgen.all_crds().values() if c["spec"]["names"]["kind"] == sample["kind"]]
    assert sample["apiVersion"] == f"{crd['spec']['group']}/{crd['spec']['versions'][0]['name']}"
    schema = crdgen.openapi_schema(crd)
    jsonschema.Draft202012Validator(crdgen.to_json_schema(schema, reject_unknown=True)).validate(
        sample
    )
    assert crdgen.prune(sample, schema) == sample
    obj = MODELS[sample["kind"]].model_validate(sample)
    assert obj.to_wire()["metadata"]["name"] == sample["metadata"]["name"]


def test_samples_are_the_documented_shapes() -> None:
    for file, sample in _samples():
        kind = sample["kind"]
        if kind == "Runner":
            assert Runner.model_validate(sample).spec.organization
        elif kind == "RunnerReplicaSet":
            replica_set = RunnerReplicaSet.model_validate(sample)
            assert replica_set.spec.replicas == 2
            assert replica_set.spec.template.spec.repository
        elif kind == "RunnerDeployment" and file == "runnerdeployment.yaml":
            deployment = RunnerDeployment.model_validate(sample)
            assert deployment.spec.replicas == 2
            assert deployment.spec.template.spec.organization
            assert deployment.spec.template.spec.labels
        elif kind == "RunnerDeployment":  # sized by the HRA next to it
            deployment = RunnerDeployment.model_validate(sample)
            assert deployment.spec.replicas is None
            assert deployment.spec.template.spec.ephemeral
        elif kind == "HorizontalRunnerAutoscaler":
            hra = HorizontalRunnerAutoscaler.model_validate(sample)
            assert hra.spec.scale_target_ref is not None
            targets = [s for _, s in _samples() if s["kind"] == "RunnerDeployment"]
            assert hra.spec.scale_target_ref.name in {t["metadata"]["name"] for t in targets}
            assert hra.spec.min_replicas == 0
            assert len(hra.spec.scale_up_triggers) == 1


# ---------------------------------------------------------------------------------------------
# Metacontroller controllers


def test_every_composite_parent_is_an_installed_crd_with_status() -> None:
    installed = {
        (crd["spec"]["group"], crd["spec"]["names"]["plural"]): crd
        for crd in _of_kind("CustomResourceDefinition")
    }
    for controller in _of_kind("CompositeController"):
        parent = controller["spec"]["parentResource"]
        group, _, version = parent["apiVersion"].rpartition("/")
        crd = installed[(group, parent["resource"])]
        (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
        assert served["served"]
        # Without the status subresource Metacontroller ignores the controller.
        assert "status" in served.get("subresources", {})


def test_hooks_are_v2_webhooks_to_paths_the_app_serves() -> None:
    service = _one("Service", "arc-hooks")
    (port,) = service["spec"]["ports"]
    host = f"{service['metadata']['name']}.{service['metadata']['namespace']}"
    controllers = [*_of_kind("CompositeController"), *_of_kind("DecoratorController")]
    assert controllers
    for controller in controllers:
        for name, hook in _webhooks(controller):
            assert hook["version"] == "v2", (controller["metadata"]["name"], name)
            webhook = hook["webhook"]
            url = urlsplit(webhook["url"])
            assert (url.scheme, url.hostname, url.port or 80) == ("http", host, port["port"])
            assert url.path in APP_HOOK_PATHS
            assert url.path.startswith(f"/{name}/")
            # A Go duration, as Metacontroller parses it.
            assert re.fullmatch(r"\d+s", webhook["timeout"])


def _strategies(controller: dict[str, Any]) -> dict[tuple[str, str], str]:
    return {
        (child["apiVersion"], child["resource"]): child["updateStrategy"]["method"]
        for child in controller["spec"]["childResources"]
    }


def _hook_paths(controller: dict[str, Any]) -> dict[str, str]:
    return {name: urlsplit(hook["webhook"]["url"]).path for name, hook in _webhooks(controller)}


def _installed_resources() -> set[tuple[str, str]]:
    """(apiVersion, resource) of every custom resource the install serves."""
    return {
        (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["plural"])
        for crd in _of_kind("CustomResourceDefinition")
        for version in crd["spec"]["versions"]
        if version["served"]
    }


def test_runner_controller() -> None:
    controller = _one("CompositeController", "arc-hooks-runner")
    spec = controller["spec"]
    assert spec["parentResource"] == {"apiVersion": ARC_API_VERSION, "resource": "runners"}
    # Pods are replaced by the hook itself, after a graceful stop; never by Metacontroller.
    # Kubernetes container mode: the Runner's own ServiceAccount, Role and RoleBinding.
    assert _strategies(controller) == {
        ("v1", "pods"): "OnDelete",
        ("v1", "secrets"): "InPlace",
        ("v1", "serviceaccounts"): "InPlace",
        ("rbac.authorization.k8s.io/v1", "roles"): "InPlace",
        ("rbac.authorization.k8s.io/v1", "rolebindings"): "InPlace",
    }
    assert spec["generateSelector"] is True
    # A safety net: a watched Runner asks for its call when its scope's next list is out.
    assert spec["resyncPeriodSeconds"] == 600
    assert _hook_paths(controller) == {
        "sync": "/sync/runner",
        "finalize": "/finalize/runner",
        "customize": "/customize/runner",
    }


def test_runnerreplicaset_controller() -> None:
    controller = _one("CompositeController", "arc-hooks-runnerreplicaset")
    spec = controller["spec"]
    assert spec["parentResource"] == {
        "apiVersion": ARC_API_VERSION,
        "resource": "runnerreplicasets",
    }
    # Runners are removed by leaving them out (their finalize hook stops them gracefully),
    # never updated or recreated by Metacontroller.
    assert _strategies(controller) == {(ARC_API_VERSION, "runners"): "OnDelete"}
    assert spec["generateSelector"] is True
    assert spec["resyncPeriodSeconds"] == 60
    # No finalize hook: deleting the replica set deletes its Runners, which finalize themselves.
    assert _hook_paths(controller) == {"sync": "/sync/runnerreplicaset"}


def test_runnerdeployment_controller() -> None:
    controller = _one("CompositeController", "arc-hooks-runnerdeployment")
    spec = controller["spec"]
    assert spec["parentResource"] == {
        "apiVersion": ARC_API_VERSION,
        "resource": "runnerdeployments",
    }
    assert _strategies(controller) == {(ARC_API_VERSION, "runnerreplicasets"): "InPlace"}
    assert spec["generateSelector"] is True
    assert spec["resyncPeriodSeconds"] == 60
    assert _hook_paths(controller) == {
        "sync": "/sync/runnerdeployment",
        "finalize": "/finalize/runnerdeployment",
        "customize": "/customize/runnerdeployment",
    }


def test_runnerset_controller() -> None:
    controller = _one("CompositeController", "arc-hooks-runnerset")
    spec = controller["spec"]
    assert spec["parentResource"] == {"apiVersion": ARC_API_VERSION, "resource": "runnersets"}
    assert _strategies(controller) == {
        ("apps/v1", "statefulsets"): "InPlace",
        ("v1", "secrets"): "InPlace",
        ("v1", "persistentvolumeclaims"): "OnDelete",
    }
    assert spec["generateSelector"] is True
    assert _hook_paths(controller) == {
        "sync": "/sync/runnerset",
        "finalize": "/finalize/runnerset",
        "customize": "/customize/runnerset",
    }


def test_custom_children_are_installed_crds() -> None:
    installed = _installed_resources()
    for controller in _of_kind("CompositeController"):
        for child in controller["spec"]["childResources"]:
            if _group(child) in CUSTOM_GROUPS:
                assert (child["apiVersion"], child["resource"]) in installed, child


def test_related_resources_of_customize_hooks_are_installed() -> None:
    # Metacontroller fails a parent's sync when a related resource is not served.
    parent = {
        "apiVersion": ARC_API_VERSION,
        "kind": "RunnerDeployment",
        "metadata": {"name": "example", "namespace": "default", "uid": "1"},
        "spec": {"template": {"spec": {"organization": "org"}}},
    }
    response = customize_runner_deployment({"controller": {}, "parent": parent})
    rules = response["relatedResources"]
    assert rules
    for rule in rules:
        assert (rule["apiVersion"], rule["resource"]) in _installed_resources(), rule


# ---------------------------------------------------------------------------------------------
# The hook Deployment


def test_deployment_runs_the_server_on_the_service_port() -> None:
    container = _container()
    assert container["args"] == ["serve", "--host", "0.0.0.0", "--port", str(CONTAINER_PORT)]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http": CONTAINER_PORT}
    (service_port,) = _one("Service", "arc-hooks")["spec"]["ports"]
    assert service_port["port"] == 80
    assert ports[service_port["targetPort"]] == CONTAINER_PORT


def test_deployment_is_highly_available() -> None:
    deployment = _deployment()
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["replicas"] >= 2
    selectors = [
        deployment["spec"]["selector"]["matchLabels"],
        _one("Service", "arc-hooks")["spec"]["selector"],
        _one("PodDisruptionBudget", "arc-hooks")["spec"]["selector"]["matchLabels"],
    ]
    for selector in selectors:
        assert selector.items() <= labels.items()
    assert _one("PodDisruptionBudget", "arc-hooks")["spec"]["minAvailable"] == 1


def test_deployment_probes_health_and_readiness() -> None:
    container = _container()
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert get["path"] == path
        assert ports.get(get["port"], get["port"]) == CONTAINER_PORT


def test_deployment_is_locked_down() -> None:
    pod = _deployment()["spec"]["template"]["spec"]
    container = _container()
    context = container["securityContext"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert context["runAsNonRoot"] is True
    assert context["runAsUser"] == UID
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}
    # Metacontroller writes to the API server; the hooks' token may only delete pods, create
    # events, and read the parents a stale copy would mislead (README, "Stale caches").
    assert pod["automountServiceAccountToken"] is True
    assert _granted(_one("ClusterRole", "arc-hooks")) == {
        ("", "pods", "delete"),
        ("", "events", "create"),
        ("actions.summerwind.dev", "runners", "get"),
        ("actions.summerwind.dev", "runnerreplicasets", "get"),
        ("actions.summerwind.dev", "runnerdeployments", "get"),
        ("actions.summerwind.dev", "runnersets", "get"),
    }
    assert set(container["resources"]) == {"requests", "limits"}
    assert "memory" in container["resources"]["limits"]
    # A writable /tmp, since the root filesystem is read-only.
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]
    assert pod["terminationGracePeriodSeconds"] > 10


def test_deployment_reads_arcs_credentials_secret() -> None:
    env = {e["name"]: e for e in _container()["env"]}
    aliases = {field.alias for field in Settings.model_fields.values()}
    for name, key in CREDENTIAL_ENV.items():
        ref = env[name]["valueFrom"]["secretKeyRef"]
        assert ref == {"name": "controller-manager", "key": key, "optional": True}
    # Every variable set is one the server reads.
    assert set(env) <= aliases


# ---------------------------------------------------------------------------------------------
# The image


def _dockerfile_stages() -> list[list[str]]:
    """The Dockerfile's instructions (continuations joined), split into stages."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    lines = [line for line in text.replace("\\\n", " ").splitlines() if line.strip()]
    stages: list[list[str]] = []
    for line in lines:
        if line.lstrip().startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            stages.append([])
        if stages:
            stages[-1].append(line.strip())
    return stages


def _instruction(stage: list[str], name: str) -> list[str]:
    return [line.split(None, 1)[1] for line in stage if line.split(None, 1)[0].upper() == name]


def test_image_runs_as_the_deployment_expects() -> None:
    final = _dockerfile_stages()[-1]
    assert _instruction(final, "USER") == [f"{UID}:{UID}"]
    assert _instruction(final, "EXPOSE") == [str(CONTAINER_PORT)]
    (entrypoint,) = _instruction(final, "ENTRYPOINT")
    (cmd,) = _instruction(final, "CMD")
    assert yaml.safe_load(entrypoint) == ["arc-hooks"]
    assert yaml.safe_load(cmd) == _container()["args"]
    with (ROOT / "pyproject.toml").open("rb") as f:
        assert "arc-hooks" in tomllib.load(f)["project"]["scripts"]


def test_image_is_multi_stage_without_build_tools_at_run_time() -> None:
    stages = _dockerfile_stages()
    assert len(stages) >= 2
    final = stages[-1]
    assert not any(re.search(r"build-essential|gcc|apt-get install", line) for line in final)
    assert any("--from=builder" in line for line in _instruction(final, "COPY"))


def test_build_context_has_what_the_build_copies() -> None:
    ignore = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    for kept in ("pyproject.toml", "README.md", "hooks/"):
        assert f"!{kept}" in ignore


def test_the_webhook_receiver_has_the_minimal_rbac_and_its_own_service() -> None:
    role = _one("ClusterRole", "arc-hooks-webhook")
    assert _granted(role) == {
        ("actions.summerwind.dev", "horizontalrunnerautoscalers", "list"),
        ("actions.summerwind.dev", "runnerdeployments", "list"),
        ("actions.summerwind.dev", "runnersets", "list"),
        ("arc-hooks.dev", "capacityreservations", "get"),
        ("arc-hooks.dev", "capacityreservations", "create"),
        ("arc-hooks.dev", "capacityreservations", "patch"),
    }
    binding = _one("ClusterRoleBinding", "arc-hooks-webhook")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    (subject,) = binding["subjects"]
    deployment = _one("Deployment", "arc-hooks-webhook")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == subject["name"]
    service = _one("Service", "arc-hooks-webhook")
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    # The hook server itself only deletes pods stuck on lost nodes, with its own account.
    hooks = _one("Deployment", "arc-hooks")
    (hooks_binding,) = [
        b for b in _of_kind("ClusterRoleBinding") if b["roleRef"]["name"] == "arc-hooks"
    ]
    (hooks_subject,) = hooks_binding["subjects"]
    assert hooks["spec"]["template"]["spec"]["serviceAccountName"] == hooks_subject["name"]


# ---------------------------------------------------------------------------------------------
# Only Metacontroller may call the hooks

HOOK_TOKEN_SECRET = {"name": "arc-hooks-hook-token", "namespace": "arc-hooks", "key": "token"}


def _controllers() -> list[dict[str, Any]]:
    return _of_kind("CompositeController") + _of_kind("DecoratorController")


def test_every_hook_call_carries_the_token_of_the_hook_secret() -> None:
    from arc_sim.metacontroller.endpoint import credential_ref
    from arc_sim.metacontroller.spec import webhook_url

    for controller in _controllers():
        configs = controller["spec"].get("endpointConfigs") or []
        for name, hook in _webhooks(controller):
            webhook = hook["webhook"]
            ref = credential_ref(webhook, webhook_url(webhook), configs)
            assert ref is not None, f"{_object_id(controller)} {name} sends no credential"
            assert (ref.kind, ref.scheme) == ("authorization", "Bearer")
            assert {"name": ref.name, "namespace": ref.namespace, "key": ref.key} == (
                HOOK_TOKEN_SECRET
            )


def test_the_hook_server_compares_with_the_same_secret_mounted() -> None:
    pod = _deployment()["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in _container()["env"]}
    mounts = {m["name"]: m for m in _container()["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    (name,) = [n for n, v in volumes.items() if "secret" in v]
    assert volumes[name]["secret"]["secretName"] == HOOK_TOKEN_SECRET["name"]
    assert mounts[name]["readOnly"] is True
    directory = mounts[name]["mountPath"]
    assert env["HOOK_BEARER_TOKEN_FILE"] == f"{directory}/{HOOK_TOKEN_SECRET['key']}"
    assert env["HOOK_BEARER_TOKEN_PREVIOUS_FILE"] == f"{directory}/previous-token"
    assert "HOOKS_ALLOW_UNAUTHENTICATED" not in env
    # The receiver is exposed to GitHub: it gets no hook credential, so its hooks answer 503.
    receiver = _one("Deployment", "arc-hooks-webhook")["spec"]["template"]["spec"]
    receiver_env = {e["name"] for c in receiver["containers"] for e in c.get("env", [])}
    assert not {n for n in receiver_env if n.startswith("HOOK")}


def test_only_metacontrollers_pods_reach_the_hook_port() -> None:
    policy = _one("NetworkPolicy", "arc-hooks")["spec"]
    labels = _deployment()["spec"]["template"]["metadata"]["labels"]
    assert policy["podSelector"]["matchLabels"].items() <= labels.items()
    assert policy["policyTypes"] == ["Ingress"]
    (rule,) = policy["ingress"]
    (peer,) = rule["from"]
    assert peer == {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "metacontroller"}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "metacontroller"}},
    }
    assert rule["ports"] == [{"port": "http", "protocol": "TCP"}]


def test_anyone_reaches_the_webhook_receiver_port_and_only_it() -> None:
    policy = _one("NetworkPolicy", "arc-hooks-webhook")["spec"]
    receiver = _one("Deployment", "arc-hooks-webhook")["spec"]["template"]["metadata"]["labels"]
    hooks = _deployment()["spec"]["template"]["metadata"]["labels"]
    selector = policy["podSelector"]["matchLabels"]
    assert selector.items() <= receiver.items()
    assert not selector.items() <= hooks.items()
    (rule,) = policy["ingress"]
    assert "from" not in rule
    assert rule["ports"] == [{"port": "http", "protocol": "TCP"}]


def test_the_receivers_public_port_serves_no_metrics() -> None:
    """Its metrics name repositories, workflows and jobs: they are on a health port of its own,
    which the Service (what an Ingress or load balancer exposes) does not route."""
    pod = _one("Deployment", "arc-hooks-webhook")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    args = container["args"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert args[0] == "serve"
    assert int(args[args.index("--port") + 1]) == ports["http"]
    assert int(args[args.index("--health-port") + 1]) == ports["health"]
    # No hook either, whatever the ConfigMap it shares with the hooks says.
    assert "--webhook-only" in args
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["port"] == "health"
    (service_port,) = _one("Service", "arc-hooks-webhook")["spec"]["ports"]
    assert service_port["targetPort"] == "http"
    # Scrapers in the cluster reach the health port through a Service of its own.
    (metrics_port,) = _one("Service", "arc-hooks-webhook-metrics")["spec"]["ports"]
    assert metrics_port["targetPort"] == "health"


# ---------------------------------------------------------------------------------------------
# The TLS component (cert-manager certificates, HTTPS, mTLS)

TLS_COMPONENT = MANIFESTS / "components" / "tls"


@functools.cache
def _tls_build() -> list[dict[str, Any]] | None:
    """The install with the TLS component, as a user's kustomization composes them."""
    if not kustomize_available():
        return None
    with tempfile.TemporaryDirectory() as directory:
        user = Path(directory)
        kustomization = {
            "resources": [os.path.relpath(MANIFESTS, user)],
            "components": [os.path.relpath(TLS_COMPONENT, user)],
        }
        (user / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
        result = subprocess.run(
            [*_kustomize(), str(user)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def test_tls_component_builds_https_hooks_with_metacontrollers_client_certificate() -> None:
    built = _tls_build()
    if built is None:  # no kustomize: the component's own files are what can be checked
        (component,) = _load(TLS_COMPONENT / "kustomization.yaml")
        assert component["kind"] == "Component"
        assert all((TLS_COMPONENT / r).is_file() for r in component["resources"])
        return
    by_id = {_object_id(obj): obj for obj in built}
    certificates = {o["spec"]["secretName"]: o["spec"] for o in built if o["kind"] == "Certificate"}
    assert "client auth" in certificates["arc-hooks-metacontroller-tls"]["usages"]
    server = certificates["arc-hooks-tls"]
    assert "arc-hooks.arc-hooks" in server["dnsNames"] and "server auth" in server["usages"]
    assert not [o for o in built if o["kind"] == "ConfigMap"]  # the scheme is local config

    controllers = [o for o in built if _group(o) == "metacontroller.k8s.io"]
    assert len(controllers) == 6
    for controller in controllers:
        schema = crdgen.to_json_schema(
            _metacontroller_schema(controller["kind"]), reject_unknown=True
        )
        jsonschema.Draft202012Validator(schema).validate(controller)
        (endpoint,) = controller["spec"]["endpointConfigs"]
        assert endpoint["caBundle"]["secretRef"]["name"] == "arc-hooks-tls"
        assert endpoint["clientTLS"]["secretRef"]["name"] == "arc-hooks-metacontroller-tls"
        assert endpoint["authorization"]["secretRef"] == HOOK_TOKEN_SECRET
        for _, hook in _webhooks(controller):
            url = urlsplit(hook["webhook"]["url"])
            assert (url.scheme, url.netloc) == ("https", endpoint["host"])

    (port,) = by_id["Service/arc-hooks"]["spec"]["ports"]
    assert (port["port"], port["targetPort"]) == (443, "http")
    pod = by_id["Deployment/arc-hooks"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    for variable, key in (
        ("HOOK_TLS_CERT_FILE", "tls.crt"),
        ("HOOK_TLS_KEY_FILE", "tls.key"),
        ("HOOK_TLS_CLIENT_CA_FILE", "ca.crt"),
    ):
        directory, _, name = env[variable].rpartition("/")
        assert name == key
        assert volumes[mounts[directory]]["secret"]["secretName"] == "arc-hooks-tls"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["health"] == int(env["HOOK_HEALTH_PORT"]) != ports["http"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["port"] == "health"
    for obj in built:
        if _group(obj) not in CUSTOM_GROUPS | {"cert-manager.io"}:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


# ---------------------------------------------------------------------------------------------
# Settings on a cluster

CONFIG_MAP = "arc-hooks-config"


def _readme_settings() -> list[str]:
    """The variables of the README's configuration table."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("## Configuration", 1)[1].split("\n### ", 1)[0]
    names: list[str] = []
    for row in table.splitlines():
        if row.startswith("| `"):
            names += re.findall(r"`([A-Z][A-Z0-9_]+)`", row.split("|")[1])
    return names


def test_every_setting_of_the_readme_is_one_the_server_reads() -> None:
    aliases = {field.alias for field in Settings.model_fields.values()}
    names = _readme_settings()
    assert len(names) > 30
    assert set(names) <= aliases


def test_both_deployments_read_settings_from_an_optional_config_map() -> None:
    for name in ("arc-hooks", "arc-hooks-webhook"):
        (container,) = _one("Deployment", name)["spec"]["template"]["spec"]["containers"]
        assert container["envFrom"] == [{"configMapRef": {"name": CONFIG_MAP, "optional": True}}]
        # Nothing the table lists is pinned in `env`, except credentials from Secrets.
        pinned = {e["name"] for e in container["env"] if "value" in e}
        assert pinned <= {"HOOK_BEARER_TOKEN_FILE", "HOOK_BEARER_TOKEN_PREVIOUS_FILE"}


def test_the_readmes_overlay_reaches_both_deployments_and_every_controller() -> None:
    """The README's overlay: kustomize names the generated ConfigMap with a content hash and
    rewrites the references, so a changed setting rolls the Deployments out."""
    if not kustomize_available():  # .ci/run installs it; without, the references only
        test_both_deployments_read_settings_from_an_optional_config_map()
        return
    with tempfile.TemporaryDirectory() as directory:
        user = Path(directory)
        kustomization = {
            "resources": [os.path.relpath(MANIFESTS, user)],
            "configMapGenerator": [
                {
                    "name": CONFIG_MAP,
                    "namespace": "arc-hooks",
                    "literals": ["SYNC_PERIOD=30", "RUNNER_REGISTRATION_MODE=jit"],
                }
            ],
            # The README's patch of Metacontroller's own resync, to go with SYNC_PERIOD.
            "patches": _readme_resync_patches(),
        }
        (user / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
        result = subprocess.run(
            [*_kustomize(), str(user)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert result.returncode == 0, result.stderr
    built = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    (config,) = [o for o in built if o["kind"] == "ConfigMap"]
    assert config["metadata"]["name"].startswith(CONFIG_MAP + "-")
    assert config["data"] == {"SYNC_PERIOD": "30", "RUNNER_REGISTRATION_MODE": "jit"}
    for deployment in [o for o in built if o["kind"] == "Deployment"]:
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        (source,) = container["envFrom"]
        assert source["configMapRef"]["name"] == config["metadata"]["name"]
    controllers = {
        o["metadata"]["name"]: o["spec"]["resyncPeriodSeconds"]
        for o in built
        if _group(o) == "metacontroller.k8s.io"
    }
    # The safety nets of the Runner controller and the pod decorator stay as they are.
    safety_nets = {"arc-hooks-runner", "arc-hooks-runner-pod"}
    assert {name: period for name, period in controllers.items() if name in safety_nets} == {
        name: 600 for name in safety_nets
    }
    assert len(controllers) == 6
    assert {period for name, period in controllers.items() if name not in safety_nets} == {30}


def _readme_resync_patches() -> list[dict[str, Any]]:
    """The `patches` of the README's example that changes `resyncPeriodSeconds`."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = [block.split("```", 1)[0] for block in readme.split("```yaml\n")[1:]]
    (example,) = [b for b in blocks if "resyncPeriodSeconds" in b and "patches:" in b]
    patches: list[dict[str, Any]] = yaml.safe_load(textwrap.dedent(example))["patches"]
    return patches


def _kustomize() -> tuple[str, ...]:
    command = kustomize_command()
    assert command is not None  # the callers check kustomize_available() first
    return command
