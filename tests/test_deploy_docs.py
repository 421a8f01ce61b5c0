"""The README's deploy story, checked against what it describes: the image overlay builds and
points every Deployment at the image, the uninstall names the real resources and finalizers, and
every field, answer, metric and setting the troubleshooting guide quotes is one the code has."""

from __future__ import annotations

import asyncio
import copy
import fnmatch
import functools
import json
import os
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_args

import jsonpatch
import pytest
import yaml

from arc_sim.kube_port import StoreKube
from arc_sim.store import ObjectStore
from arc_sim.webhooks import signature_256
from hooks.clock import ManualClock, format_time
from hooks.github.port import RemoveOutcome
from hooks.kube.port import KubeError, KubeObject, Resource
from hooks.lifecycle.graceful_stop import GRACEFUL_STOP_ANNOTATION, NOT_REGISTERED_YET
from hooks.metrics import REGISTRY
from hooks.resources.runner import StopOutcome
from hooks.settings import Settings
from hooks.webhook import receiver as webhook_receiver
from hooks.webhook.endpoint import TOO_LARGE, TOO_MANY_AT_ONCE, TOO_SLOW
from hooks.webhook.receiver import WebhookReceiver
from hooks.webhook.targets import RunnerGroup
from tests.kubectl import kustomize_available, kustomize_command

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
MANIFESTS = ROOT / "metacontroller"
HOOKS = ROOT / "hooks"
HOOK_SERVERS = ("arc-hooks", "arc-hooks-webhook")
DEPLOYMENTS = (*HOOK_SERVERS, "arc-hooks-listener")


def section(heading: str) -> str:
    """A README section, from its heading to the next heading of the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = README.splitlines()
    start = lines.index(heading)
    end = next(
        (
            n
            for n in range(start + 1, len(lines))
            if re.match(rf"^#{{1,{level}}} ", lines[n]) and not _in_code_block(lines[start + 1 : n])
        ),
        len(lines),
    )
    return "\n".join(lines[start:end])


def _in_code_block(lines: list[str]) -> bool:
    return sum(1 for line in lines if line.lstrip().startswith("```")) % 2 == 1


def code_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^\s*```{language}\n(.*?)^\s*```", text, flags=re.MULTILINE | re.DOTALL)


def table(text: str) -> dict[str, str]:
    """A two-column table: first cell (without backticks) -> second cell."""
    rows = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) >= 2:
            rows[cells[0].strip("`")] = " | ".join(cells[1:])
    return rows


def spans(text: str) -> list[str]:
    return re.findall(r"`([^`\n]+)`", text)


def source(*parts: str) -> str:
    return (HOOKS.joinpath(*parts)).read_text(encoding="utf-8")


def all_source() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in sorted(HOOKS.rglob("*.py")))


@functools.cache
def manifests() -> list[dict[str, Any]]:
    found = []
    for path in sorted(MANIFESTS.glob("*.yaml")) + sorted((MANIFESTS / "crds").glob("*.yaml")):
        found += [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]
    return found


def shipped_image() -> str:
    """The image name (without tag) of both Deployments."""
    images: set[str] = {
        container["image"].rpartition(":")[0]
        for obj in manifests()
        if obj["kind"] == "Deployment"
        for container in obj["spec"]["template"]["spec"]["containers"]
    }
    (image,) = images
    return image


# ------------------------------------------------------------------------ building the image

BUILD = "### Building the image"
REGISTRY_VALUE, TAG_VALUE = "registry.example.com/team", "1.2.3"


def documented_overlay() -> dict[str, Any]:
    (block,) = [b for b in code_blocks(section(BUILD), "yaml") if "images:" in b]
    overlay: dict[str, Any] = yaml.safe_load(block)
    return overlay


def test_the_documented_build_pushes_the_image_the_overlay_names() -> None:
    (commands,) = code_blocks(section(BUILD), "sh")
    build = re.search(r"^docker build -t (\S+) \.$", commands, flags=re.MULTILINE)
    push = re.search(r"^docker push (\S+)$", commands, flags=re.MULTILINE)
    assert build is not None and push is not None
    (image,) = documented_overlay()["images"]
    assert build[1] == push[1] == f"{image['newName']}:{image['newTag']}"
    assert image["name"] == shipped_image()


def test_what_the_build_section_says_of_the_image_is_what_the_dockerfile_does() -> None:
    text = " ".join(section(BUILD).split())
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    base = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", dockerfile, flags=re.MULTILINE)
    user = re.search(r"^USER (\d+):\d+$", dockerfile, flags=re.MULTILINE)
    assert base is not None and user is not None
    assert f"`{base[1]}` (build argument `PYTHON_IMAGE`)" in text
    assert f"as user {user[1]}" in text
    kept = [
        line[1:] for line in (ROOT / ".dockerignore").read_text().splitlines() if line[:1] == "!"
    ]
    assert "sends only " + ", ".join(f"`{k}`" for k in kept[:-1]) + f" and `{kept[-1]}`" in text


def test_the_documented_overlay_points_both_deployments_at_the_built_image(
    tmp_path: Path,
) -> None:
    if not kustomize_available():
        pytest.skip("neither kubectl 1.21+ nor kustomize 4.1+ is installed (.ci/run installs one)")
    overlay = documented_overlay()
    assert len(overlay["resources"]) == 1 and overlay["resources"][0].endswith("metacontroller")
    overlay["resources"] = [os.path.relpath(MANIFESTS, tmp_path)]
    text = yaml.safe_dump(overlay).replace("REGISTRY", REGISTRY_VALUE).replace("TAG", TAG_VALUE)
    (tmp_path / "kustomization.yaml").write_text(text)

    result = subprocess.run(
        [*_kustomize(), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    built = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    deployments = {o["metadata"]["name"]: o for o in built if o["kind"] == "Deployment"}
    assert set(deployments) == set(DEPLOYMENTS)
    for deployment in deployments.values():
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert container["image"] == f"{REGISTRY_VALUE}/arc-hooks:{TAG_VALUE}"
    assert shipped_image() not in result.stdout


# ------------------------------------------------------------------- upgrading, uninstalling


def crd_plurals() -> set[str]:
    return {
        obj["spec"]["names"]["plural"]
        for obj in manifests()
        if obj["kind"] == "CustomResourceDefinition"
    }


def test_the_documented_metacontroller_patch_raises_its_client_rate_limit() -> None:
    """The deploy section's JSON patch applies to Metacontroller's production StatefulSet and
    leaves its own arguments in place."""
    match = re.search(r"patch statefulset metacontroller --type json -p '(\[.*?\])'", README, re.S)
    assert match is not None, "the deploy section patches Metacontroller"
    patch = jsonpatch.JsonPatch(json.loads(match.group(1)))
    reference = ROOT / "tests/reference/metacontroller/metacontroller-statefulset-v4.17.2.yaml"
    statefulset = next(
        doc for doc in yaml.safe_load_all(reference.read_text()) if doc["kind"] == "StatefulSet"
    )
    assert statefulset["metadata"]["namespace"] == "metacontroller"
    patched = patch.apply(statefulset)
    (container,) = patched["spec"]["template"]["spec"]["containers"]
    assert container["args"][:2] == ["--zap-log-level=4", "--discovery-interval=20s"]
    assert container["args"][2:] == ["--client-go-qps=100", "--client-go-burst=200"]


def test_the_upgrade_facts_match_the_manifests() -> None:
    text = section("### Upgrading")
    versions = {
        version["name"]
        for obj in manifests()
        if obj["kind"] == "CustomResourceDefinition"
        for version in obj["spec"]["versions"]
    }
    assert versions == {"v1alpha1"} and "`v1alpha1`" in text
    for name in HOOK_SERVERS:
        (deployment,) = [
            o for o in manifests() if o["kind"] == "Deployment" and o["metadata"]["name"] == name
        ]
        assert deployment["spec"]["replicas"] == 2
        assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    assert "rollout status deployment/arc-hooks" in text


def test_the_uninstall_deletes_real_resources_in_order() -> None:
    text = section("### Uninstalling")
    deletes = re.findall(r"kubectl delete ([a-z,]+) --all -A", text)
    assert deletes[0] == "horizontalrunnerautoscalers"  # nothing scales back up
    deleted = {name for names in deletes for name in names.split(",")}
    assert deleted == crd_plurals() - {"capacityreservations"}  # those go with their HRA
    (decorator,) = [o for o in manifests() if o["kind"] == "DecoratorController"]
    (selector,) = decorator["spec"]["resources"][0]["labelSelector"]["matchExpressions"]
    assert selector["operator"] == "Exists"
    assert f"kubectl wait --for=delete pods -l {selector['key']} -A" in text
    assert text.index("kubectl wait") < text.index("kubectl delete -k metacontroller/")


def test_the_uninstall_names_every_finalizer_metacontroller_puts_on_runners() -> None:
    expected = set()
    for obj in manifests():
        if obj["kind"] in ("CompositeController", "DecoratorController") and (
            "finalize" in obj["spec"].get("hooks", {})
        ):
            expected.add(f"metacontroller.io/{obj['kind'].lower()}-{obj['metadata']['name']}")
    documented = {
        s for s in spans(section("### Uninstalling")) if s.startswith("metacontroller.io/")
    }
    assert documented == expected


# ------------------------------------------------------------------------ troubleshooting

STUCK = "### A Runner stuck Terminating"
WEBHOOK = "### A webhook that does not scale"
RATE_LIMITS = "### GitHub rate limits"


def runner_status_schema() -> dict[str, Any]:
    (crd,) = [
        o
        for o in manifests()
        if o["kind"] == "CustomResourceDefinition" and o["spec"]["names"]["kind"] == "Runner"
    ]
    (version,) = crd["spec"]["versions"]
    status: dict[str, Any] = version["schema"]["openAPIV3Schema"]["properties"]["status"]
    return status


def test_the_graceful_stop_record_is_documented_field_by_field() -> None:
    text = section(STUCK)
    assert "jsonpath='{.status.gracefulStop}'" in text
    rows = table(text)
    fields = runner_status_schema()["properties"]["gracefulStop"]["properties"]

    assert set(rows) == set(fields)
    outcomes = {s for s in spans(rows["outcome"]) if s[0].isupper()}
    assert outcomes == set(get_args(StopOutcome))
    runner_code = source("runner", "decide.py") + source("lifecycle", "graceful_stop.py")
    stop_code = runner_code + source("runnerset", "decide.py")
    for reason in spans(rows["reason"]):
        assert f'"{reason}"' in stop_code, reason
    # Every reason a stop starts with, for a Runner or a RunnerSet's runner, is in the table.
    started = set(re.findall(r'begin_stop\(\s*"(\w+)"', stop_code))
    assert started and started <= set(spans(rows["reason"]))
    messages = [s for s in spans(rows["message"]) if " " in s]
    assert NOT_REGISTERED_YET in messages
    for message in messages:
        assert message in runner_code, message


def test_the_conditions_and_annotations_quoted_are_the_codes() -> None:
    text = section(STUCK) + section(WEBHOOK) + section(RATE_LIMITS)
    code = all_source()
    for name in ("Stopping", "RemovingRegistration", "Registered", "GitHubUnavailable"):
        assert f"`{name}`" in text and f'"{name}"' in code, name
    assert '"ScalingActive"' in source("autoscaler", "controller.py")
    assert f"`{GRACEFUL_STOP_ANNOTATION}`" in text
    assert 'status.conditions[?(@.type=="Stopping")]' in text
    runner_status = runner_status_schema()["properties"]
    assert {"gracefulStop", "conditions"} <= set(runner_status)
    assert "not ready: " in source("health.py") and "`not ready:`" in README


# The receiver's answers the webhook table quotes, produced for real.

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SECRET = b"webhook secret"
API = "actions.summerwind.dev/v1alpha1"
EXAMPLE = json.loads(
    (ROOT / "tests/reference/github/webhooks/examples/workflow_job.queued.5.json").read_text()
)


def hra(name: str, triggers: list[dict[str, Any]] | None = None) -> KubeObject:
    webhook = [{"githubEvent": {"workflowJob": {}}, "duration": "30m"}]
    return {
        "apiVersion": API,
        "kind": "HorizontalRunnerAutoscaler",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"kind": "RunnerDeployment", "name": name},
            "maxReplicas": 10,
            "scaleUpTriggers": webhook if triggers is None else triggers,
        },
    }


def runners(name: str, **spec: Any) -> KubeObject:
    return {
        "apiVersion": API,
        "kind": "RunnerDeployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"template": {"spec": spec or {"repository": "octo-org/app", "labels": ["linux"]}}},
    }


def job(action: str, job_id: int = 1, labels: tuple[str, ...] = ("self-hosted", "linux")) -> bytes:
    payload: dict[str, Any] = copy.deepcopy(EXAMPLE)
    payload["action"] = action
    payload["workflow_job"].update(
        id=job_id,
        labels=list(labels),
        status=action,
        conclusion=None,
        runner_id=None,
        created_at=format_time(T0),
        started_at=format_time(T0),
    )
    payload["repository"].update(name="app", full_name="octo-org/app")
    payload["repository"]["owner"].update(login="octo-org", type="Organization")
    payload["organization"] = {"login": "octo-org", "id": 9919}
    return json.dumps(payload).encode()


def headers(body: bytes, event: str = "workflow_job", secret: bytes = SECRET) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": "d-1",
        "X-Hub-Signature-256": signature_256(secret, body),
    }


class BrokenKube(StoreKube):
    async def list(self, resource: Resource, namespace: str | None = None) -> list[KubeObject]:
        raise KubeError("forbidden")


def receiver(
    *objects: KubeObject,
    secret: bytes | None = SECRET,
    visible: list[RunnerGroup] | None = None,
    broken: bool = False,
) -> WebhookReceiver:
    clock = ManualClock(T0)
    store = ObjectStore(clock)
    for obj in objects:
        store.create(obj)
    return WebhookReceiver(
        (BrokenKube if broken else StoreKube)(store),
        clock,
        secret=secret,
        runner_group_visibility=(lambda org, repo: list(visible)) if visible is not None else None,
    )


@functools.cache
def real_answers() -> list[str]:
    """`<status> <body>` of deliveries covering every row of the README's table."""
    answers = []

    def send(target: WebhookReceiver, body: bytes, **kwargs: Any) -> None:
        reply = asyncio.run(target.handle(headers(body, **kwargs), body))
        answers.append(f"{reply.status} {reply.message}")

    fitting = receiver(hra("app"), runners("app"))
    send(fitting, job("queued"))
    send(fitting, job("queued"))  # redelivered
    send(fitting, job("in_progress"))
    send(fitting, job("queued", 2), secret=b"another secret")
    send(fitting, b"{}", event="push")
    send(fitting, job("queued", 3, ("self-hosted", "gpu")))
    send(receiver(), job("queued", 4))  # no HRA at all
    send(receiver(hra("two", [{"duration": "5m"}] * 2), runners("two")), job("queued", 5))
    send(receiver(hra("pull", [{"duration": "5m"}]), runners("pull")), job("queued", 6))
    groups = runners("org", organization="octo-org", group="ci", labels=["linux"])
    send(receiver(hra("org"), groups, visible=[]), job("queued", 7))
    send(receiver(secret=None), job("queued", 8))
    send(receiver(broken=True), job("queued", 9))
    # The endpoint's own, given before a body reaches the receiver (tests/test_request_body.py).
    answers += [f"{r.status} {r.message}" for r in (TOO_LARGE, TOO_MANY_AT_ONCE, TOO_SLOW)]
    return answers


def pattern(documented: str) -> str:
    text = re.escape(documented)
    text = re.sub(re.escape("<") + r"[^>]*?" + re.escape(">"), ".+?", text)
    return text.replace(re.escape("..."), ".*")


def test_every_answer_the_webhook_table_quotes_is_one_the_receiver_gives() -> None:
    rows = table(section(WEBHOOK))
    assert len(rows) >= 8
    for documented in rows:
        assert any(re.fullmatch(pattern(documented), a) for a in real_answers()), (
            documented,
            real_answers(),
        )


def test_every_reason_quoted_for_a_missing_target_is_one_the_receiver_gives() -> None:
    rows = table(section(WEBHOOK))
    (no_target,) = [meaning for answer, meaning in rows.items() if "no horizontal" in answer]
    reasons = [s for s in spans(no_target) if " " in s]
    assert len(reasons) >= 4
    for reason in reasons:
        assert any(re.search(pattern(reason), a) for a in real_answers()), (reason, real_answers())


def test_the_webhook_outcomes_and_probe_answer_are_the_receivers() -> None:
    text = section(WEBHOOK)
    outcomes = {
        webhook_receiver.SCALED,
        webhook_receiver.UNCHANGED,
        webhook_receiver.IGNORED,
        webhook_receiver.REJECTED,
        webhook_receiver.FAILED,
    }
    (sentence,) = re.findall(r"labels `event`, `action`, `outcome`: ([^)]*)\)", text)
    assert set(spans(sentence)) == outcomes
    assert "`webhook server is running`" in text
    assert '"webhook server is running"' in source("webhook", "endpoint.py")
    assert "`/webhook/github`" in text and '"/webhook/github"' in source("webhook", "endpoint.py")


def test_the_github_call_outcomes_documented_are_the_counters_labels() -> None:
    text = section(RATE_LIMITS)
    (sentence,) = re.findall(r"and `outcome` \(([^)]*)\)", text)
    removal = {outcome.value for outcome in RemoveOutcome}
    assert set(spans(sentence)) == {"2xx", "4xx", "5xx", "transport_error"} | removal
    assert '"transport_error"' in source("github", "pygithub_adapter.py")
    assert '"rate_limited"' in source("github", "rest.py")


# ------------------------------------------------------------------- metric and setting names


def exported_metric_names() -> set[str]:
    names = set()
    for family in REGISTRY.collect():
        if family.type == "counter":
            names.add(f"{family.name}_total")
        elif family.type == "histogram":
            names |= {family.name} | {f"{family.name}_{s}" for s in ("bucket", "sum", "count")}
        else:
            names.add(family.name)
    return names


METRIC = re.compile(
    r"(?<![\w.])(?:arc_hooks_|horizontalrunnerautoscaler_|github_workflow_)"
    r"(?:[a-z0-9_]|\{[a-z0-9_,]+\}(?=[a-z0-9_]))*\*?"
)


def readme_metric_names() -> set[str]:
    """Every metric name the README quotes, with `{a,b}` spelled out; label sets dropped."""
    names: set[str] = set()
    for span in spans(README):
        for found in METRIC.findall(span):
            names |= _expand(found)
    return names


def _expand(name: str) -> set[str]:
    group = re.search(r"\{([^}]*)\}", name)
    if group is None:
        return {name}
    return set().union(
        *(
            _expand(name[: group.start()] + part + name[group.end() :])
            for part in group[1].split(",")
        )
    )


def test_every_metric_the_readme_names_is_exported() -> None:
    exported = exported_metric_names()
    documented = readme_metric_names()
    assert len(documented) >= 15
    for name in documented:
        assert fnmatch.filter(exported, name), f"{name} is not a metric of hooks/metrics.py"


def test_the_troubleshooting_guide_uses_the_metrics_that_answer_its_questions() -> None:
    text = section(WEBHOOK) + section(RATE_LIMITS) + section("## Troubleshooting")
    for name in (
        "arc_hooks_webhook_deliveries_total",
        "arc_hooks_github_api_calls_total",
        "arc_hooks_github_rate_limit_remaining",
        "arc_hooks_github_rate_limit",
        "arc_hooks_hook_refusals_total",
        "horizontalrunnerautoscaler_status_desired_replicas",
    ):
        assert f"`{name}" in text and name in exported_metric_names(), name


def test_every_setting_the_deploy_and_troubleshooting_sections_name_is_real() -> None:
    text = "\n".join(
        section(heading)
        for heading in (BUILD, "### Upgrading", "### Uninstalling", "## Troubleshooting")
    )
    named = {s for s in spans(text) if re.fullmatch(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)+", s)}
    named |= set(re.findall(r"`([A-Z][A-Z0-9_]+)=", text))
    aliases = {field.alias for field in Settings.model_fields.values()}
    assert len(named) >= 8
    # PYTHON_IMAGE is the Dockerfile's build argument, not a setting.
    assert named - {"PYTHON_IMAGE"} <= aliases, named - aliases
    assert "ARG PYTHON_IMAGE=" in (ROOT / "Dockerfile").read_text()


def _kustomize() -> tuple[str, ...]:
    command = kustomize_command()
    assert command is not None  # the callers check kustomize_available() first
    return command
