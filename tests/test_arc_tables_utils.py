"""Ported from actions/actions-runner-controller (Apache-2.0), with attribution

ARC's tests at revision 2ee6b3b8 of controllers/actions.summerwind.net/utils_test.go:
`Test_filterLabels` (its one row, "ok"), `Test_workVolumeClaimTemplateVolumeV1VolumeTransformation`
and `Test_workVolumeClaimTemplateV1VolumeMount`.

ARC tests helpers the pod builder uses; this project has no such helpers, so each test drives
the behaviour the helper serves through the pod builder (`hooks.runner.pod.build_runner_pod`),
with the helper's inputs and expected output:

- `filterLabels(runner.Labels, LabelKeyRunnerTemplateHash)` is used once in ARC
  (runner_controller.go, `newRunnerPod`): its result is what the Runner's labels contribute to
  the pod's `pod-template-hash` label. So a Runner labelled with the row's `labels` must get the
  pod-template-hash of a Runner labelled with the row's `want`.
- `WorkVolumeClaimTemplate.V1Volume()` and `.V1VolumeMount(workDir)` are what
  `applyWorkVolumeClaimTemplateToPod` adds to a `containerMode: kubernetes` pod: its `work`
  volume and the runner container's mount of it at the Runner's `workDir`. So a Runner with the
  test's `workVolumeClaimTemplate` (and, for the mount, `workDir: /test/_work`) must get that
  volume and that mount, checked as ARC checks them.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hooks.resources.runner import Runner
from hooks.runner.pod import POD_TEMPLATE_HASH_LABEL, build_runner_pod
from hooks.runner.secret import registration_secret_name
from hooks.runner.validation import validate_runner_spec
from hooks.settings import Settings

Json = dict[str, Any]

API = "actions.summerwind.dev/v1alpha1"
LABEL_KEY_RUNNER_TEMPLATE_HASH = "runner-template-hash"  # ARC's LabelKeyRunnerTemplateHash
LABEL_KEY_POD_TEMPLATE_HASH = "pod-template-hash"  # ARC's LabelKeyPodTemplateHash
SETTINGS = Settings.model_validate({})


def runner(spec: Json, labels: dict[str, str] | None = None) -> Runner:
    return Runner.model_validate(
        {
            "apiVersion": API,
            "kind": "Runner",
            "metadata": {"name": "runner", "namespace": "default", "labels": labels or {}},
            "spec": spec,
        }
    )


def pod_of(runner_: Runner) -> Json:
    return build_runner_pod(
        runner_,
        SETTINGS,
        secret_name=registration_secret_name(runner_.metadata.name),
        jit=False,
    )


# ------------------------------------------------------------------ Test_filterLabels


def test_filter_labels_ok() -> None:
    """ARC's `filterLabels` leaves the Runner's runner-template-hash label out of ARC's pod hash.
    Deliberately different here (README, 'Where arc-hooks differs from ARC, on purpose': the
    `pod-template-hash` label is a digest of the built pod rather than ARC's hash of the
    Runner): the built pod carries that label, so it takes part in the digest. A Runner's
    runner-template-hash never changes (a new template makes new Runners), so no pod is
    replaced for it."""
    labels = {LABEL_KEY_RUNNER_TEMPLATE_HASH: "abc", LABEL_KEY_POD_TEMPLATE_HASH: "def"}
    want = {LABEL_KEY_POD_TEMPLATE_HASH: "def"}
    spec = {"repository": "test/valid"}

    got = pod_of(runner(spec, labels))["metadata"]["labels"][POD_TEMPLATE_HASH_LABEL]
    filtered = pod_of(runner(spec, want))["metadata"]["labels"][POD_TEMPLATE_HASH_LABEL]

    assert got != filtered  # ARC: equal


# ------------------------------------------------------------------ work volume claim template

STORAGE_CLASS_NAME = "local-storage"
WORK_VOLUME_CLAIM_TEMPLATE: Json = {
    "storageClassName": STORAGE_CLASS_NAME,
    "accessModes": ["ReadWriteOnce", "ReadWriteMany"],
    "resources": {},  # corev1.VolumeResourceRequirements{}
}


def kubernetes_mode_runner(**extra: Any) -> Runner:
    spec: Json = {
        "repository": "test/valid",
        "containerMode": "kubernetes",
        "workVolumeClaimTemplate": WORK_VOLUME_CLAIM_TEMPLATE,
        **extra,
    }
    built = runner(spec)
    # ARC's table leaves out the storage request, which the API server requires of a claim
    # template (`ValidatePersistentVolumeClaimSpec`): the hooks mark such a Runner invalid and
    # ask for no pod (README, "Validation is stricter"). ARC's test checks the transformation,
    # which is that of the pod built all the same; nothing else is wrong with the Runner.
    assert validate_runner_spec(built.spec, metadata=built.metadata) == [
        "the runner pod would be refused: spec.volumes[work].ephemeral.volumeClaimTemplate"
        ".spec.resources.requests[storage]: required"
    ]
    return built


def test_work_volume_claim_template_volume_v1_volume_transformation() -> None:
    want: Json = {
        "name": "work",
        "ephemeral": {
            "volumeClaimTemplate": {
                "spec": {
                    "accessModes": ["ReadWriteOnce", "ReadWriteMany"],
                    "storageClassName": STORAGE_CLASS_NAME,
                    "resources": {},
                }
            }
        },
    }

    pod = pod_of(kubernetes_mode_runner())
    volumes = [v for v in pod["spec"]["volumes"] if v.get("name") == want["name"]]
    assert len(volumes) == 1, f"want name {want['name']!r}, got {pod['spec']['volumes']}"
    got = volumes[0]

    assert got.get("ephemeral") is not None, (
        "work volume claim template should transform itself into Ephemeral volume source"
    )
    assert got["ephemeral"].get("volumeClaimTemplate") is not None, (
        "work volume claim template should have ephemeral volume claim template set"
    )
    got_spec = got["ephemeral"]["volumeClaimTemplate"]["spec"]
    want_spec = want["ephemeral"]["volumeClaimTemplate"]["spec"]

    assert got_spec.get("storageClassName") == want_spec["storageClassName"], (
        f"expected storage class name {want_spec['storageClassName']!r}, "
        f"got {got_spec.get('storageClassName')!r}"
    )
    got_access_modes = got_spec.get("accessModes") or []
    want_access_modes = want_spec["accessModes"]
    assert len(got_access_modes) == len(want_access_modes), (
        f"access modes lengths missmatch: got {got_access_modes}, expected {want_access_modes}"
    )
    assert Counter(got_access_modes) == Counter(want_access_modes), (
        "got access modes did not take every access mode into account\n"
        f"actual: {got_access_modes} expected: {want_access_modes}"
    )


def test_work_volume_claim_template_v1_volume_mount() -> None:
    mount_path = "/test/_work"
    want = {"mountPath": mount_path, "name": "work"}

    pod = pod_of(kubernetes_mode_runner(workDir=mount_path))
    runner_containers = [c for c in pod["spec"]["containers"] if c["name"] == "runner"]
    assert len(runner_containers) == 1
    mounts = [m for m in runner_containers[0].get("volumeMounts") or [] if m["name"] == "work"]

    # ARC: `if want != got`, a comparison of the whole VolumeMount struct.
    assert mounts == [want], f"expected volume mount {want}, actual {mounts}"
