"""Runner spec validation, as ARC's admission webhook does it (plus what ARC found at pod build)."""

from __future__ import annotations

import re

from hooks.resources.runner import REPOSITORY_PATTERN, SCOPE_PATTERN, RunnerSpec

ALLOWED_WORK_ACCESS_MODES = ("ReadWriteOnce", "ReadWriteMany")
MAX_JIT_LABELS = 100


def validate_runner_spec(spec: RunnerSpec, *, jit: bool = False) -> list[str]:
    """Every problem with the spec, in words a user can act on; empty when valid."""
    problems = _scope_problems(spec)
    problems += _container_mode_problems(spec)
    if jit:
        problems += _jit_problems(spec)
    return problems


def _scope_problems(spec: RunnerSpec) -> list[str]:
    scopes = [s for s in (spec.enterprise, spec.organization, spec.repository) if s]
    if not scopes:
        return ["spec needs enterprise, organization or repository"]
    if len(scopes) > 1:
        return ["spec cannot have many fields defined enterprise, organization and repository"]
    checks = (
        ("enterprise", spec.enterprise, SCOPE_PATTERN),
        ("organization", spec.organization, SCOPE_PATTERN),
        ("repository", spec.repository, REPOSITORY_PATTERN),
    )
    return [
        f"spec.{field} {value!r} does not match {pattern}"
        for field, value, pattern in checks
        if value and not re.match(pattern, value)
    ]


def _container_mode_problems(spec: RunnerSpec) -> list[str]:
    mode = spec.container_mode or ""
    if mode == "":
        if _is_zero_quantity(spec.volume_size_limit) and _docker_sidecar(spec):
            return ["spec.volumeSizeLimit 0 disables the runner volume the docker sidecar needs"]
        return []
    if mode != "kubernetes":
        return [f'spec.containerMode {mode!r} is not supported (use "" or "kubernetes")']
    template = spec.work_volume_claim_template
    if template is None:
        return ["spec.containerMode: kubernetes must have workVolumeClaimTemplate field specified"]
    problems: list[str] = []
    if not template.access_modes:
        problems.append("Access mode should have at least one mode specified")
    problems += [
        f"Access mode {mode!r} is not supported"
        for mode in template.access_modes
        if mode not in ALLOWED_WORK_ACCESS_MODES
    ]
    if any(v.get("name") == "work" for v in spec.volumes):
        problems.append("spec.volumes must not define 'work' in kubernetes container mode")
    if any(m.get("name") == "work" for m in spec.volume_mounts):
        problems.append("spec.volumeMounts must not mount 'work' in kubernetes container mode")
    return problems


def _jit_problems(spec: RunnerSpec) -> list[str]:
    problems: list[str] = []
    if spec.ephemeral is False:
        problems.append(
            "JIT registration makes ephemeral runners: spec.ephemeral must not be false"
        )
    if len(spec.labels) + 1 > MAX_JIT_LABELS:
        problems.append(f"JIT registration allows at most {MAX_JIT_LABELS - 1} labels")
    return problems


def _docker_sidecar(spec: RunnerSpec) -> bool:
    return spec.docker_enabled is not False and not spec.dockerd_within_runner_container


def _is_zero_quantity(value: int | str | None) -> bool:
    if value is None:
        return False
    try:
        return float(str(value).rstrip("KMGTPEikmnu")) == 0
    except ValueError:
        return False
